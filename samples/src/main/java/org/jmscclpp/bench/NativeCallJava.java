package org.jmscclpp.bench;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.bench.NativeCallBench.Call;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.CudaHotCalls;
import org.jmscclpp.nativebridge.Downcalls;
import org.jspecify.annotations.Nullable;

/**
 * The Java side of {@code jmscclpp bench native} for one binding, in a JVM of its own: {@link NativeCallBench}
 * starts one per binding through the {@link org.jmscclpp.samples.Launcher}, as it runs the C side as a process
 * of its own, so that neither binding runs a loop whose compiled code the other's calls shaped. On GPU DEVICE's
 * primary context, the same objects as the C program's: first {@value #JIT_WARMUP_ROUNDS} untimed rounds of every
 * call, then each call not skipped, ROUNDS rounds of ITERS calls after untimed rounds until the JIT settled (at least {@value #JIT_WARMUP_ROUNDS}, then on until two rounds in a row
 * in which the JIT compiled at most {@link JitSettle#QUIET_MILLIS} ms, at most {@value #JIT_WARMUP_MAX_ROUNDS}),
 * the median round's ns per call; calls that enqueue work in batches of {@value #BATCH} with the context
 * synchronized between batches outside the timed part. FFM's calls again on a virtual thread.
 *
 * <p>With LIBRARY, {@code native_calls.c} built as a library: {@link Call#NOTHING its empty function} through this
 * binding (FFM: critical, as {@code cuCtxSetCurrent} is linked; JNA: direct mapping), and, for FFM on the
 * platform thread, the same loops of the C code timed in this process, each timed round of Java's followed by one
 * of C's on the same objects: C and Java in the same process, on the same thread, at the same moments. One line
 * per measurement and one per warm-up, on stdout:
 * <pre>
 * JAVA binding=FFM thread=platform call=cuEventQuery ns=130.1234
 * C-IN-JVM binding=FFM call=cuEventQuery ns=127.5000
 * JAVA-WARMUP binding=FFM rounds=4 settled=true
 * </pre>
 * Usage: {@code NativeCallJava BINDING DEVICE ITERS ROUNDS SKIPPED LIBRARY} (SKIPPED: the calls' symbols,
 * comma-separated, or {@code -}; LIBRARY: the library's path, or {@code -}, which skips {@link Call#NOTHING}).
 * A failed driver call ends it with its message on stderr and exit code 1.
 */
public final class NativeCallJava {

    /** Untimed rounds before the timed ones at least (C runs one)... */
    static final int JIT_WARMUP_ROUNDS = 2;
    /** ... then more until the JIT settled, this many in all at most. */
    static final int JIT_WARMUP_MAX_ROUNDS = 12;
    static final int BATCH = 512;
    static final int COPY_BYTES = 64;

    private static final Duration VIRTUAL_TIMEOUT = Duration.ofSeconds(300);
    private static final Pattern CALL_LINE = Pattern.compile(
            "JAVA binding=(\\S+) thread=(platform|virtual) call=(\\S+) ns=(\\S+)");
    private static final Pattern C_LINE = Pattern.compile("C-IN-JVM binding=(\\S+) call=(\\S+) ns=(\\S+)");
    private static final Pattern WARMUP_LINE = Pattern.compile("JAVA-WARMUP binding=(\\S+) rounds=(\\d+) settled=(true|false)");

    /** The library build of {@code native_calls.c}, or null; set by {@link #main} before {@link CLibrary} loads. */
    private static @Nullable String library;

    private NativeCallJava() {
    }

    /** Where a measured call ran: Java on the platform or a virtual thread, or the C loop in this JVM. */
    enum Where {
        PLATFORM, VIRTUAL, C_IN_JVM
    }

    /**
     * A line of this program: a measured call ({@code call} not null: {@code ns}, {@code where}) or a warm-up
     * ({@code call} null: its {@code rounds} and whether the JIT settled).
     */
    record Line(CudaHotCalls.Binding binding, Where where, @Nullable Call call, double ns, int rounds,
                boolean settled) {

        String text() {
            if (call == null) {
                return "JAVA-WARMUP binding=" + binding + " rounds=" + rounds + " settled=" + settled;
            }
            return where == Where.C_IN_JVM
                    ? String.format(Locale.ROOT, "C-IN-JVM binding=%s call=%s ns=%.4f", binding, call.symbol, ns)
                    : String.format(Locale.ROOT, "JAVA binding=%s thread=%s call=%s ns=%.4f", binding,
                    where == Where.VIRTUAL ? "virtual" : "platform", call.symbol, ns);
        }

        /** The line {@code text} is, or null for any other text. */
        static @Nullable Line parse(String text) {
            try {
                Matcher m = CALL_LINE.matcher(text.strip());
                if (m.matches()) {
                    return measured(m.group(1), m.group(2).equals("virtual") ? Where.VIRTUAL : Where.PLATFORM,
                            m.group(3), m.group(4));
                }
                Matcher c = C_LINE.matcher(text.strip());
                if (c.matches()) {
                    return measured(c.group(1), Where.C_IN_JVM, c.group(2), c.group(3));
                }
                Matcher w = WARMUP_LINE.matcher(text.strip());
                return w.matches() ? new Line(CudaHotCalls.Binding.valueOf(w.group(1)), Where.PLATFORM, null, 0,
                        Integer.parseInt(w.group(2)), Boolean.parseBoolean(w.group(3))) : null;
            } catch (IllegalArgumentException e) {
                return null;
            }
        }

        private static @Nullable Line measured(String binding, Where where, String symbol, String ns) {
            Call call = Call.bySymbol(symbol).orElse(null);
            return call == null ? null : new Line(CudaHotCalls.Binding.valueOf(binding), where, call,
                    Double.parseDouble(ns), 0, true);
        }
    }

    /**
     * The arguments of the program that measures {@code binding} as {@code o} says, {@code skipped} left out, with
     * {@code library} (null: none).
     */
    static List<String> args(CudaHotCalls.Binding binding, NativeCallBench.Options o, Set<Call> skipped,
                             @Nullable String library) {
        return List.of(binding.name(), Integer.toString(o.device()), Long.toString(o.iters()),
                Integer.toString(o.rounds()), skipped.isEmpty() ? "-"
                        : String.join(",", skipped.stream().map(c -> c.symbol).toList()),
                library == null ? "-" : library);
    }

    /** See the class comment. */
    public static void main(String[] args) {
        if (args.length != 6) {
            System.err.println("usage: NativeCallJava BINDING DEVICE ITERS ROUNDS SKIPPED LIBRARY");
            System.exit(2);
        }
        Set<Call> skipped = EnumSet.noneOf(Call.class);
        if (!args[4].equals("-")) {
            for (String symbol : args[4].split(",")) {
                skipped.add(Call.bySymbol(symbol).orElseThrow(() -> new IllegalArgumentException("no call " + symbol)));
            }
        }
        if (args[5].equals("-")) {
            skipped.add(Call.NOTHING);
        } else {
            library = args[5];
        }
        try {
            measure(CudaHotCalls.Binding.valueOf(args[0]), new NativeCallBench.Options(Long.parseLong(args[2]),
                    Integer.parseInt(args[3]), Integer.parseInt(args[1]), 0, true), skipped);
        } catch (RuntimeException e) {
            System.err.println("NativeCallJava: " + e.getMessage());
            System.exit(1);
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** The state the calls use: the same objects as the C program's. */
    private record Fixture(long context, long stream, long event, long function, long word, long src, long dst,
                           Memory params) {
    }

    /** Measures {@code binding}'s calls (FFM's also on a virtual thread), printing a line for each. */
    static void measure(CudaHotCalls.Binding binding, NativeCallBench.Options o, Set<Call> skipped) {
        int[] device = new int[1];
        long[] out = new long[1];
        CudaDriver.check(CudaDriver.cuInit(0), "cuInit");
        CudaDriver.check(CudaDriver.cuDeviceGet(device, o.device()), "cuDeviceGet(" + o.device() + ")");
        CudaDriver.check(CudaDriver.cuDevicePrimaryCtxRetain(out, device[0]), "cuDevicePrimaryCtxRetain");
        long context = out[0];
        try {
            CudaDriver.check(CudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
            CudaDriver.check(CudaDriver.cuStreamCreate(out, CudaDriver.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
            long stream = out[0];
            CudaDriver.check(CudaDriver.cuEventCreate(out, CudaDriver.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
            long event = out[0];
            long[] words = new long[3];
            for (int i = 0; i < 3; i++) {
                CudaDriver.check(CudaDriver.cuMemAlloc_v2(out, i == 0 ? Long.BYTES : COPY_BYTES), "cuMemAlloc_v2");
                words[i] = out[0];
            }
            byte[] ptx = (NativeCallBench.PTX + "\0").getBytes(StandardCharsets.US_ASCII);
            CudaDriver.check(CudaDriver.cuModuleLoadData(out, ptx), "cuModuleLoadData(empty kernel)");
            long module = out[0];
            try (Memory argument = new Memory(Long.BYTES); Memory params = new Memory(Long.BYTES)) {
                CudaDriver.check(CudaDriver.cuModuleGetFunction(out, module, "jmscclpp_empty"), "cuModuleGetFunction");
                argument.setLong(0, words[0]);
                params.setPointer(0, argument);
                CudaDriver.check(CudaDriver.cuEventRecord(event, stream), "cuEventRecord");
                CudaDriver.check(CudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
                Fixture f = new Fixture(context, stream, event, out[0], words[0], words[1], words[2], params);
                CudaHotCalls hot = CudaHotCalls.of(binding);
                if (paired(hot, Where.PLATFORM)) {
                    CLibrary.use(f);
                }
                // every call's loop runs before any is timed: the measuring method is compiled for all of
                // them (as a proxy's loop is for all it does), not first for one and then again
                for (Call call : Call.values()) {
                    for (int r = 0; r < JIT_WARMUP_ROUNDS && !skipped.contains(call); r++) {
                        timedCalls(hot, call, f, o.iters());
                    }
                }
                medians(hot, Where.PLATFORM, f, o, skipped);
                if (binding == CudaHotCalls.Binding.FFM) {
                    onVirtualThread(f, o, skipped);
                }
            } finally {
                CudaDriver.cuModuleUnload(module);
                for (long w : words) {
                    CudaDriver.cuMemFree_v2(w);
                }
                CudaDriver.cuEventDestroy_v2(event);
                CudaDriver.cuStreamDestroy_v2(stream);
            }
        } finally {
            CudaDriver.cuDevicePrimaryCtxRelease_v2(device[0]);
        }
    }

    /** The FFM binding's calls measured on a virtual thread (its carrier made the context current first). */
    private static void onVirtualThread(Fixture f, NativeCallBench.Options o, Set<Call> skipped) {
        AtomicReference<@Nullable RuntimeException> failed = new AtomicReference<>();
        Thread t = Thread.ofVirtual().name("jmscclpp-bench-native").start(() -> {
            try {
                CudaHotCalls hot = CudaHotCalls.of(CudaHotCalls.Binding.FFM);
                CudaDriver.check(hot.cuCtxSetCurrent(f.context()), "cuCtxSetCurrent (virtual thread)");
                medians(hot, Where.VIRTUAL, f, o, skipped);
            } catch (RuntimeException e) {
                failed.set(e);
            }
        });
        try {
            if (!t.join(VIRTUAL_TIMEOUT)) {
                throw new IllegalStateException("the virtual thread's calls did not end within " + VIRTUAL_TIMEOUT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the virtual thread measured", e);
        }
        RuntimeException e = failed.get();
        if (e != null) {
            throw e;
        }
    }

    /** Whether C's loops are timed in this JVM beside {@code hot}'s calls on {@code where}: FFM, platform thread. */
    private static boolean paired(CudaHotCalls hot, Where where) {
        return library != null && hot.binding() == CudaHotCalls.Binding.FFM && where == Where.PLATFORM;
    }

    /**
     * Prints the median cost of every call not skipped, through {@code hot}, on this thread, and where
     * {@link #paired} that of C's loop in this JVM.
     */
    private static void medians(CudaHotCalls hot, Where where, Fixture f, NativeCallBench.Options o,
                                Set<Call> skipped) {
        boolean paired = paired(hot, where);
        for (Call call : Call.values()) {
            if (!skipped.contains(call)) {
                double[] ns = median(hot, call, f, o, paired);
                say(new Line(hot.binding(), where, call, ns[0], 0, true).text());
                if (paired) {
                    say(new Line(hot.binding(), Where.C_IN_JVM, call, ns[1], 0, true).text());
                }
            }
        }
    }

    /** The median ns per call of Java's rounds and, {@code paired}, of C's rounds alternated with them. */
    private static double[] median(CudaHotCalls hot, Call call, Fixture f, NativeCallBench.Options o,
                                   boolean paired) {
        // untimed rounds (C has one) until the JIT has compiled the loop for this binding and call
        int warm = 0;
        int quiet = 0;
        while (warm < JIT_WARMUP_ROUNDS || quiet < JitSettle.QUIET_STEPS && warm < JIT_WARMUP_MAX_ROUNDS) {
            long before = JitSettle.compileMillis();
            timedCalls(hot, call, f, o.iters());
            quiet = JitSettle.compileMillis() - before <= JitSettle.QUIET_MILLIS ? quiet + 1 : 0;
            warm++;
        }
        say(new Line(hot.binding(), Where.PLATFORM, null, 0, warm, quiet >= JitSettle.QUIET_STEPS).text());
        if (paired) {
            CLibrary.timed(call, o.iters());  // C's untimed round, as the C program has
        }
        double[] java = new double[o.rounds()];
        double[] c = new double[o.rounds()];
        for (int r = 0; r < java.length; r++) {
            java[r] = (double) timedCalls(hot, call, f, o.iters()) / o.iters();
            c[r] = paired ? CLibrary.timed(call, o.iters()) / o.iters() : Double.NaN;
        }
        return new double[] {middle(java), middle(c)};
    }

    private static double middle(double[] values) {
        Arrays.sort(values);
        int n = values.length;
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    }

    /** {@code n} calls, timed; the nanoseconds they took (the drains between batches are not timed). */
    private static long timedCalls(CudaHotCalls hot, Call call, Fixture f, long n) {
        int failure = 0;
        if (!call.enqueues()) {
            long start = System.nanoTime();
            if (call == Call.EVENT_QUERY) {
                for (long i = 0; i < n; i++) {
                    int r = hot.cuEventQuery(f.event());
                    failure = failure == 0 ? r : failure;
                }
            } else if (call == Call.NOTHING && hot.binding() == CudaHotCalls.Binding.FFM) {
                for (long i = 0; i < n; i++) {
                    int r = CLibrary.nothing(i);
                    failure = failure == 0 ? r : failure;
                }
            } else if (call == Call.NOTHING) {
                for (long i = 0; i < n; i++) {
                    int r = JnaNothing.native_calls_nothing(i);
                    failure = failure == 0 ? r : failure;
                }
            } else {
                for (long i = 0; i < n; i++) {
                    int r = hot.cuCtxSetCurrent(f.context());
                    failure = failure == 0 ? r : failure;
                }
            }
            long elapsed = System.nanoTime() - start;
            CudaDriver.check(failure, call.symbol + " through " + hot.binding());
            return elapsed;
        }
        long elapsed = 0;
        long value = 0;
        for (long done = 0; done < n; ) {
            long batch = Math.min(BATCH, n - done);
            long start = System.nanoTime();
            switch (call) {
                case WRITE_VALUE -> {
                    for (long i = 0; i < batch; i++) {
                        int r = hot.cuStreamWriteValue64_v2(f.stream(), f.word(), ++value, 0);
                        failure = failure == 0 ? r : failure;
                    }
                }
                case MEMCPY -> {
                    for (long i = 0; i < batch; i++) {
                        int r = hot.cuMemcpyDtoDAsync_v2(f.dst(), f.src(), COPY_BYTES, f.stream());
                        failure = failure == 0 ? r : failure;
                    }
                }
                default -> {
                    for (long i = 0; i < batch; i++) {
                        int r = hot.cuLaunchKernel(f.function(), 1, 1, 1, 1, 1, 1, 0, f.stream(), f.params(), null);
                        failure = failure == 0 ? r : failure;
                    }
                }
            }
            elapsed += System.nanoTime() - start;
            CudaDriver.check(failure, call.symbol + " through " + hot.binding());
            CudaDriver.check(CudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
            done += batch;
        }
        return elapsed;
    }

    /**
     * {@code native_calls.c}'s library through {@code java.lang.foreign}, linked as {@link CudaHotCalls#ffm()} links
     * the driver ({@link Downcalls}): its empty function critical, as {@code cuCtxSetCurrent} is; the rest plain.
     */
    private static final class CLibrary {
        private static final MethodHandle NOTHING;
        private static final MethodHandle BIND;
        private static final MethodHandle USE;
        private static final MethodHandle TIMED;

        static {
            Downcalls calls = Downcalls.of(NativeLibrary.getInstance(Objects.requireNonNull(library)));
            NOTHING = calls.bind("native_calls_nothing", FunctionDescriptor.of(JAVA_INT, JAVA_LONG), true);
            BIND = calls.bind("native_calls_bind", FunctionDescriptor.of(JAVA_INT), false);
            USE = calls.bind("native_calls_use", FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                    JAVA_LONG, JAVA_LONG, JAVA_LONG), false);
            TIMED = calls.bind("native_calls_timed", FunctionDescriptor.of(JAVA_DOUBLE, JAVA_INT, JAVA_LONG), false);
        }

        private CLibrary() {
        }

        static int nothing(long argument) {
            try {
                return (int) NOTHING.invokeExact(argument);
            } catch (Throwable t) {
                throw Downcalls.rethrow(t);
            }
        }

        /** Binds the library's driver entry points and hands it {@code f}'s objects. */
        static void use(Fixture f) {
            try {
                if ((int) BIND.invokeExact() != 0) {
                    throw new IllegalStateException("native_calls_bind failed (its reason is on stderr)");
                }
                USE.invokeExact(f.context(), f.stream(), f.event(), f.function(), f.word(), f.src(), f.dst());
            } catch (Throwable t) {
                throw Downcalls.rethrow(t);
            }
        }

        /** The nanoseconds {@code n} calls of {@code call} took in C (the C program's enum has Call's order). */
        static double timed(Call call, long n) {
            try {
                return (double) TIMED.invokeExact(call.ordinal(), n);
            } catch (Throwable t) {
                throw Downcalls.rethrow(t);
            }
        }
    }

    /** {@code native_calls.c}'s empty function through JNA's direct mapping, as {@link CudaHotCalls#jna()} binds. */
    private static final class JnaNothing {
        static {
            Native.register(JnaNothing.class, NativeLibrary.getInstance(Objects.requireNonNull(library)));
        }

        private JnaNothing() {
        }

        static native int native_calls_nothing(long argument);
    }
}
