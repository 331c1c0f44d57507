package org.jmscclpp.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.jmscclpp.core.proxy.ProxyService;

/** The CPU the benches measure: this JVM's, every thread together, or a proxy's threads. */
final class CpuTime {

    /**
     * The threads of the JDK's default virtual-thread scheduler: its carriers, which run a
     * virtual-thread poller, its delay scheduler, which ends their timed parks (JDK 25), and its
     * unblocker.
     */
    private static final Pattern VIRTUAL_SCHEDULER =
            Pattern.compile("ForkJoinPool-\\d+-(worker-\\d+|delayScheduler)|VirtualThread-unblocker");

    private CpuTime() {
    }

    /** The process's CPU time so far (ProcessHandle's total, every thread of the JVM), ns; 0 where unknown. */
    static long processNanos() {
        return ProcessHandle.current().info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
    }

    /**
     * The names of the threads a {@link ProxyService} with {@code poller} runs on: its own
     * {@code jmscclpp-proxy-N} thread, or the virtual-thread scheduler's (every virtual thread's, the
     * loop's among them).
     */
    static Predicate<String> proxyThreads(ProxyService.Poller poller) {
        return poller == ProxyService.Poller.PLATFORM_THREAD ? name -> name.startsWith("jmscclpp-proxy-")
                : name -> VIRTUAL_SCHEDULER.matcher(name).matches();
    }

    /** The CPU time so far of the live platform threads whose names {@code names} accepts (ThreadMXBean), ns. */
    static long threadsNanos(Predicate<String> names) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
            if (t != null && names.test(t.getThreadName())) {
                sum += Math.max(0, mx.getThreadCpuTime(t.getThreadId()));
            }
        }
        return sum;
    }

    /** {@code cpuNanos} spent over {@code wallNanos}, in cores (1.0: one core busy the whole time). */
    static double cores(long cpuNanos, long wallNanos) {
        return wallNanos <= 0 ? 0 : (double) cpuNanos / wallNanos;
    }
}
