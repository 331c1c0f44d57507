package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.bootstrap.wire.WireBytes;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.BootstrapChecks;
import org.jmscclpp.testkit.RecordingHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Where the job secret of an explicit-address job ({@code MSCCLPP_COMM_ID=ip:port}) comes from:
 * {@code MSCCLPP_BOOTSTRAP_SECRET}, required unless {@code MSCCLPP_BOOTSTRAP_INSECURE=1}; and that
 * an outsider who knows the address, and so could compute an address-derived secret, can no
 * longer check in for a rank (the attack of issue 19: the root then refused the real rank).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class JobSecretTest {

    private static final Duration STEP = Duration.ofSeconds(20);
    private static final Duration START = Duration.ofSeconds(40);

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    private final List<AutoCloseable> opened = new ArrayList<>();

    @AfterEach
    void closeEverything() throws Exception {
        for (AutoCloseable c : opened.reversed()) {
            c.close();
        }
        assertEquals(0, TcpBootstrap.eventLoopUsers(), "a bootstrap or root was left holding the event loops");
    }

    private static String address() {
        return "127.0.0.1:" + LocalJob.freeFixedPort();
    }

    private static BootstrapOptions.Builder env(String... keyValues) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            env.put(keyValues[i], keyValues[i + 1]);
        }
        return BootstrapOptions.builderFrom(env).initTimeout(STEP).operationTimeout(STEP);
    }

    @Test
    void anExplicitAddressJobWithoutASecretFailsWithInvalidUsageNamingTheVariable() {
        TcpBootstrap b = TcpBootstrap.create(0, 2, env().build());
        opened.add(b);
        JmscclppException e = assertThrows(JmscclppException.class, () -> b.initialize(address()).block(STEP));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        assertEquals(0, e.rank());
        assertTrue(e.getMessage().contains("MSCCLPP_BOOTSTRAP_SECRET"), e.getMessage());
        assertTrue(e.getMessage().contains("MSCCLPP_BOOTSTRAP_INSECURE=1"), e.getMessage());
    }

    @Test
    void aRankProcessWithoutTheSecretFailsWithInvalidUsageNamingTheVariable() {
        RankProcesses job = jobs.open("no-secret", RankMain.class);
        job.start(0, List.of("rank=0", "nranks=2", "mode=address", "address=" + address(), "scenario=checks"),
                Map.of(BootstrapOptions.SECRET_ENV, ""));
        String line = job.awaitLineStartingWith(0, "FAILED ", START).text();
        assertTrue(line.startsWith("FAILED INVALID_USAGE ") && line.contains("MSCCLPP_BOOTSTRAP_SECRET"), line);
        assertEquals(RankMain.EXIT_FAILED, job.waitFor(0, Duration.ofSeconds(10)));
    }

    @Test
    void withTheSecretInTheEnvironmentTheJobRuns() {
        BootstrapOptions options = env(BootstrapOptions.SECRET_ENV, LocalJob.newSecret()).build();
        try (LocalJob job = LocalJob.withAddress(3, address(), options, STEP)) {
            BootstrapChecks.runAll(job.ranks(), STEP);
        }
    }

    @Test
    void ranksWithDifferentSecretsNeverFormAJob() {
        String address = address();
        BootstrapOptions mine = env(BootstrapOptions.SECRET_ENV, LocalJob.newSecret())
                .initTimeout(Duration.ofSeconds(2)).build();
        BootstrapOptions theirs = env(BootstrapOptions.SECRET_ENV, LocalJob.newSecret())
                .initTimeout(Duration.ofSeconds(2)).build();
        TcpBootstrap zero = TcpBootstrap.create(0, 2, mine);
        TcpBootstrap one = TcpBootstrap.create(1, 2, theirs);
        opened.add(zero);
        opened.add(one);
        CompletableFuture<TcpBootstrap> a = zero.initialize(address).toFuture();
        CompletableFuture<TcpBootstrap> b = one.initialize(address).toFuture();
        List<String> messages = new ArrayList<>();
        for (CompletableFuture<TcpBootstrap> f : List.of(a, b)) {
            JmscclppException e = assertInstanceOf(JmscclppException.class,
                    assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS))
                            .getCause());
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
            messages.add(e.getMessage());
        }
        // both say why: the root counts the connections that failed the handshake, the rank names the proof it
        // refused and what to check (whatever its last attempt met: the root gives up first)
        assertTrue(messages.get(0).contains("never checked in: rank 1") && messages.get(0).contains("failed the "
                + "handshake") && messages.get(0).contains(BootstrapOptions.SECRET_ENV), messages.get(0));
        assertTrue(messages.get(1).contains("the accepting side's proof of the job secret is wrong")
                && messages.get(1).contains("does every rank of the job have the same " + BootstrapOptions.SECRET_ENV),
                messages.get(1));
    }

    @Test
    void theInsecureOptInRunsAndWarnsThatTheSecretComesFromTheAddress() {
        Logger logger = Logger.getLogger(TcpUniqueId.class.getName());
        RecordingHandler capture = new RecordingHandler();
        logger.addHandler(capture);
        try {
            BootstrapOptions options = env(BootstrapOptions.INSECURE_ENV, "1").build();
            assertTrue(options.insecure());
            try (LocalJob job = LocalJob.withAddress(2, address(), options, STEP)) {
                BootstrapChecks.runAll(job.ranks(), STEP);
            }
        } finally {
            logger.removeHandler(capture);
        }
        List<String> warnings = capture.records().stream().filter(r -> r.getLevel() == Level.WARNING)
                .map(r -> MessageFormat.format(r.getMessage(), r.getParameters())).toList();
        assertEquals(2, warnings.size(), "one warning per rank: " + warnings);
        for (String w : warnings) {
            assertTrue(w.contains("derived from the root address") && w.contains("MSCCLPP_BOOTSTRAP_INSECURE"), w);
        }
    }

    @Test
    void aShortSecretOrAnUnknownInsecureValueIsInvalidUsage() {
        JmscclppException shortOne = assertThrows(JmscclppException.class,
                () -> env(BootstrapOptions.SECRET_ENV, "fifteen-chars!!").build());
        assertEquals(ErrorCode.INVALID_USAGE, shortOne.code());
        assertTrue(shortOne.getMessage().contains("at least 16 characters"), shortOne.getMessage());
        JmscclppException yes = assertThrows(JmscclppException.class,
                () -> env(BootstrapOptions.INSECURE_ENV, "yes").build());
        assertEquals(ErrorCode.INVALID_USAGE, yes.code());
        assertTrue(yes.getMessage().contains("MSCCLPP_BOOTSTRAP_INSECURE"), yes.getMessage());
        assertFalse(env(BootstrapOptions.INSECURE_ENV, "0").build().insecure());
    }

    /**
     * The attack of issue 19: an outsider who knows the address of a job computes what the secret
     * of an address-derived job would be, and checks in for the last rank before it comes. With a
     * real secret its proof is wrong: the root drops it before reading the check-in, reports no
     * problem, and the real rank joins.
     */
    @Test
    void anOutsiderWhoKnowsTheAddressCannotCheckInForARank() throws Exception {
        int n = 3;
        String address = address();
        String secret = LocalJob.newSecret();
        BootstrapOptions options = env(BootstrapOptions.SECRET_ENV, secret).build();
        List<TcpBootstrap> ranks = new ArrayList<>();
        List<CompletableFuture<TcpBootstrap>> inits = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            TcpBootstrap b = TcpBootstrap.create(r, n, options);
            ranks.add(b);
            opened.add(b);
        }
        for (int r = 0; r < n - 1; r++) {
            inits.add(ranks.get(r).initialize(address).toFuture());
        }
        InetSocketAddress root = BootstrapAddress.parse(address).socketAddress();
        byte[] guessed = TcpUniqueId.derived(root, null).secret();
        byte[] real = TcpUniqueId.derived(root, secret).secret();
        byte[] checkIn = WireBytes.frame(Frame.CHECK_IN, Frame.LAST, 0, checkInPayload(n - 1, n));
        try (Socket s = dialWhenAnswered(root, s1 -> WireBytes.dial(s1, WireBytes.rootPreamble(n - 1, n), real,
                guessed, checkIn, null))) {
            assertEquals(0, readUntilClosed(s).length, "the outsider's check-in must get nothing back");
        }
        inits.add(ranks.get(n - 1).initialize(address).toFuture());
        for (CompletableFuture<TcpBootstrap> f : inits) {
            f.get(STEP.toSeconds(), TimeUnit.SECONDS);
        }
        BootstrapChecks.runAll(ranks, STEP);
        assertEquals(List.of(), ranks.getFirst().rootProblems().collectList().block(STEP),
                "the outsider's check-in never reached the root's check-in logic");
    }

    private static byte[] checkInPayload(int rank, int size) {
        ByteBuf buf = Unpooled.buffer(8 + AddressBook.ENTRY_BYTES);
        try {
            buf.writeIntLE(rank);
            buf.writeIntLE(size);
            AddressBook.writeEntry(buf, 1, 1, new InetSocketAddress(InetAddress.getLoopbackAddress(), 9));
            return WireBytes.bytes(buf);
        } finally {
            buf.release();
        }
    }

    /** One attempt at a handshake on a connected socket. */
    private interface Dial {
        void on(Socket s) throws IOException;
    }

    /**
     * Connects to {@code to} and runs {@code dial}, again while nothing listens there yet or the
     * root closes the connection before answering (rank 0 is starting its root: a real rank
     * retries the same way); returns the socket of the attempt that got its answer.
     */
    private static Socket dialWhenAnswered(InetSocketAddress to, Dial dial) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + STEP.toNanos();
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(to, 5_000);
                s.setSoTimeout(5_000);
                dial.on(s);
                return s;
            } catch (SocketException | AssertionError notYet) {
                s.close();
                if (System.nanoTime() > deadline) {
                    throw notYet;
                }
                Thread.sleep(20);   // polling a root that is about to listen, within a deadline
            }
        }
    }

    private static byte[] readUntilClosed(Socket s) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                got.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the root kept the outsider's connection open", e);
        } catch (SocketException reset) {
            // dropped with our bytes unread: closed all the same
        }
        return got.toByteArray();
    }
}
