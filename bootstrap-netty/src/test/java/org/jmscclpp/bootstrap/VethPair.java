package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Assumptions;

/**
 * Two hosts on one machine for a test: two network namespaces joined by a veth pair on a private
 * /30, loopback and veth up in each. They are created under unique names and deleted by
 * {@link #close()}; no traffic leaves them. Where {@code ip} cannot run or namespaces are not
 * permitted (not root), {@link #create} aborts the calling test with the reason, printed.
 */
public final class VethPair implements AutoCloseable {

    private static final Duration COMMAND_DEADLINE = Duration.ofSeconds(10);
    private static final Duration LINK_UP_DEADLINE = Duration.ofSeconds(10);
    private static final int PREFIX = 30;
    private static final int PREFIX6 = 64;

    record Result(int exitCode, String output) {
    }

    final String nsA;
    final String nsB;
    public final String vethA;
    public final String vethB;
    private final List<String> created = new ArrayList<>();

    private VethPair(String namespacePrefix, String vethPrefix) {
        String tag = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        nsA = namespacePrefix + "-" + tag + "-a";
        nsB = namespacePrefix + "-" + tag + "-b";
        vethA = vethPrefix + tag + "a"; // interface names are at most 15 characters
        vethB = vethPrefix + tag + "b";
    }

    /**
     * Creates the pair with {@code ipA} in the first namespace and {@code ipB} in the second, or
     * aborts the calling test (named {@code who} in the printed reason) where that is not possible.
     */
    public static VethPair create(String who, String namespacePrefix, String vethPrefix, String ipA, String ipB)
            throws IOException, InterruptedException {
        Assumptions.assumeTrue(System.getProperty("os.name").startsWith("Linux"), "network namespaces are Linux only");
        VethPair p = new VethPair(namespacePrefix, vethPrefix);
        Result probe;
        try {
            probe = run("ip", "netns", "add", p.nsA);
        } catch (IOException e) {
            System.out.println(who + " skipped: cannot run `ip` (" + e.getMessage() + ")");
            Assumptions.abort("cannot run `ip`: " + e.getMessage());
            return p;
        }
        if (probe.exitCode() != 0) {
            String why = "`ip netns add` is not permitted here: " + probe.output().strip();
            System.out.println(who + " skipped: " + why);
            Assumptions.abort(why);
        }
        p.created.add(p.nsA);
        try {
            mustRun("ip", "netns", "add", p.nsB);
            p.created.add(p.nsB);
            if (ipA.contains(":")) {
                // interfaces before the veth in the first namespace only: the two ends get different
                // interface indexes, so link-local scopes differ between the "hosts" as between real ones
                mustRun("ip", "-n", p.nsA, "link", "add", "jmpad0", "type", "veth", "peer", "name", "jmpad1");
            }
            mustRun("ip", "link", "add", p.vethA, "netns", p.nsA, "type", "veth", "peer", "name", p.vethB,
                    "netns", p.nsB);
            p.addAddress(p.nsA, p.vethA, ipA);
            p.addAddress(p.nsB, p.vethB, ipB);
            for (String[] nsAndDev : new String[][] {{p.nsA, p.vethA}, {p.nsB, p.vethB}}) {
                mustRun("ip", "-n", nsAndDev[0], "link", "set", "lo", "up");
                mustRun("ip", "-n", nsAndDev[0], "link", "set", nsAndDev[1], "up");
            }
            p.awaitCarrier(p.nsA, p.vethA);
            p.awaitCarrier(p.nsB, p.vethB);
        } catch (IOException | InterruptedException | RuntimeException | AssertionError e) {
            p.close();
            throw e;
        }
        return p;
    }

    /**
     * Gives {@code dev} the address {@code ip}: IPv4 in a /{@value #PREFIX}; IPv6 in a /{@value #PREFIX6}
     * without duplicate address detection (usable at once), and then as the interface's only IPv6
     * address (no address generated from the MAC), so a link-local {@code ip} is the one the job sees.
     */
    private void addAddress(String ns, String dev, String ip) throws IOException, InterruptedException {
        if (ip.contains(":")) {
            mustRun("ip", "-n", ns, "link", "set", "dev", dev, "addrgenmode", "none");
            mustRun("ip", "-n", ns, "addr", "add", ip + "/" + PREFIX6, "dev", dev, "nodad");
        } else {
            mustRun("ip", "-n", ns, "addr", "add", ip + "/" + PREFIX, "dev", dev);
        }
    }

    /** {@code ip netns exec} into the first or second namespace, as a command prefix. */
    public List<String> exec(int host) {
        return List.of("ip", "netns", "exec", host == 0 ? nsA : nsB);
    }

    /**
     * The kernel turns a veth's carrier on asynchronously once both ends are up, and the interface
     * selector skips an interface that is not running; there is no event to wait on from outside
     * the namespace, so poll its state, bounded by {@link #LINK_UP_DEADLINE}.
     */
    private void awaitCarrier(String ns, String dev) throws IOException, InterruptedException {
        long until = System.nanoTime() + LINK_UP_DEADLINE.toNanos();
        while (true) {
            Result r = run("ip", "-n", ns, "-o", "link", "show", "dev", dev);
            if (r.exitCode() == 0 && r.output().contains("LOWER_UP") && r.output().contains("state UP")) {
                return;
            }
            if (System.nanoTime() > until) {
                fail(dev + " in " + ns + " is not up after " + LINK_UP_DEADLINE + ": " + r.output());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    /** Deletes the namespaces (and with them the veth pair); fails if one is left behind. */
    @Override
    public void close() throws IOException, InterruptedException {
        List<String> failures = new ArrayList<>();
        for (String ns : created) {
            Result r = run("ip", "netns", "del", ns);
            if (r.exitCode() != 0) {
                failures.add(ns + ": " + r.output().strip());
            }
        }
        created.clear();
        assertEquals(List.of(), failures, "namespaces left behind");
    }

    /** Runs a short command, output and errors merged, failing if it outlives its deadline. */
    static Result run(String... command) throws IOException, InterruptedException {
        File out = File.createTempFile("netns-cmd", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out).start();
            if (!p.waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly().waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                fail(String.join(" ", command) + " did not finish within " + COMMAND_DEADLINE);
            }
            return new Result(p.exitValue(), Files.readString(out.toPath(), StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out.toPath());
        }
    }

    private static void mustRun(String... command) throws IOException, InterruptedException {
        Result r = run(command);
        assertEquals(0, r.exitCode(), String.join(" ", command) + " failed: " + r.output());
    }
}
