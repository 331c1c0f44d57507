package org.jmscclpp.samples;

import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.bootstrap.RankEnvironment;

/**
 * The main class of every rank process the {@link Launcher} starts: it makes the rank die with its
 * launcher, then runs the rank's own main class.
 *
 * <pre>java ... org.jmscclpp.samples.LaunchedRank LAUNCHER_PID MAIN_CLASS [args...]</pre>
 *
 * <p>A launcher that ends normally or by {@code SIGTERM} stops its ranks itself; one killed with
 * {@code SIGKILL} runs no code, and its ranks would run on, re-parented to init. So the rank watches
 * its parent: as soon as its parent is no longer the launcher's pid (the kernel re-parents the
 * children of a dead process at once, so this holds even while the dead launcher is a zombie, and
 * a pid reused later cannot pass for it), it writes one line on stderr saying that its launcher
 * died and exits with {@link ExitCodes#FAILURE} through {@link System#exit}, so the shutdown hooks
 * release what the rank holds (the host backend's shared-memory files among them). A shutdown that
 * takes longer than {@link Launcher#KILL_GRACE} is cut short by {@link Runtime#halt}, as the
 * launcher's own {@code SIGKILL} would have. Java has no event for a parent's death without native
 * code ({@code prctl(PR_SET_PDEATHSIG)}), so a daemon thread checks the parent every
 * {@link #POLL} ms; the rank exits well within a second of its launcher.
 *
 * <p>The rank's stdin, stdout and stderr stay the rank's own: nothing is read from stdin. Ranks
 * started otherwise (by {@code mpirun}, {@code torchrun}, or {@code jmscclpp SAMPLE} by hand) do
 * not run through this class and watch nothing.
 */
public final class LaunchedRank {

    /** How often the parent is checked, in milliseconds. */
    static final long POLL = 100;

    private LaunchedRank() {
    }

    /**
     * {@code LAUNCHER_PID MAIN_CLASS [args...]}: watches the launcher, then calls
     * {@code MAIN_CLASS.main(args)} (a {@code public static void main(String[])}) on this thread; what
     * it throws propagates as if it were the JVM's main class.
     */
    public static void main(String[] args) throws Throwable {
        if (args.length < 2) {
            System.err.println("usage: " + LaunchedRank.class.getName() + " LAUNCHER_PID MAIN_CLASS [args...]");
            System.exit(ExitCodes.USAGE);
        }
        long launcher;
        try {
            launcher = Long.parseLong(args[0]);
        } catch (NumberFormatException e) {
            System.err.println("jmscclpp: the launcher's pid is not a number: '" + args[0] + "'");
            System.exit(ExitCodes.USAGE);
            return;
        }
        watch(launcher);
        MethodHandle main = MethodHandles.publicLookup().findStatic(Class.forName(args[1]), "main",
                MethodType.methodType(void.class, String[].class));
        main.invokeExact(Arrays.copyOfRange(args, 2, args.length));
    }

    /** Starts the daemon thread that ends this process when its parent is no longer {@code launcher}. */
    private static void watch(long launcher) {
        if (parent() != launcher) {
            // the launcher died before this JVM got here
            launcherDied(launcher);
        }
        Thread.ofPlatform().daemon().name("jmscclpp-launcher-watch").start(() -> {
            while (parent() == launcher) {
                LockSupport.parkNanos(Duration.ofMillis(POLL).toNanos());
            }
            launcherDied(launcher);
        });
    }

    private static long parent() {
        return ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
    }

    private static void launcherDied(long launcher) {
        String rank = System.getenv(RankEnvironment.JMSCCLPP_RANK);
        PrintStream err = System.err;
        err.println("jmscclpp: " + (rank == null ? "" : "rank " + rank + " ") + "(pid " + ProcessHandle.current().pid()
                + "): its launcher (pid " + launcher + ") died; exiting");
        err.flush();
        Thread.ofPlatform().daemon().name("jmscclpp-launcher-gone-halt").start(() -> {
            long deadline = System.nanoTime() + Launcher.KILL_GRACE.toNanos();
            for (long left = Launcher.KILL_GRACE.toNanos(); left > 0; left = deadline - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            Runtime.getRuntime().halt(ExitCodes.FAILURE);
        });
        System.exit(ExitCodes.FAILURE);
    }
}
