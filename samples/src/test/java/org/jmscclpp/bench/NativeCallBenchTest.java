package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.CudaHotCalls;
import org.jmscclpp.samples.ExitCodes;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class NativeCallBenchTest {

    private static final NativeCallBench.Options SMALL = new NativeCallBench.Options(100, 3, 0, 0, true);

    @Test
    void carriesTheCSourceOnTheClasspath() throws IOException {
        try (InputStream in = NativeCallBench.class.getResourceAsStream("native_calls.c")) {
            assertNotNull(in, "native_calls.c is not a classpath resource");
            String source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(source.contains(NativeCallBench.PTX.replace("\n", "\\n\"\n    \"").strip()
                    .substring(0, 20)), "the C program launches the kernel the bench launches");
            for (NativeCallBench.Call call : NativeCallBench.Call.values()) {
                assertTrue(source.contains("\"" + call.symbol + "\""), call.symbol);
            }
        }
    }

    /** Compiles and runs the C program: its figures on a GPU host, here a reason naming the missing driver. */
    @Test
    @Timeout(120)
    void theCProgramCompilesAndMeasuresOrSaysWhyNot() {
        Assumptions.assumeTrue(ShmPingPongFloor.compiler().isPresent(), "skipped: no C compiler on the PATH");
        NativeCallBench.CSide c = NativeCallBench.measureC(SMALL);
        assertNotNull(c.library(), "the library build of native_calls.c");
        assertTrue(java.nio.file.Files.isRegularFile(c.library()), c.library()::toString);
        if (CudaBackend.unavailableReason(1).isPresent()) {
            assertNotNull(c.problem());
            assertTrue(c.problem().contains("exited with 1") && c.problem().contains("native_calls: "), c.problem());
            System.out.println("C side without a GPU: " + c.problem());
        } else {
            assertNull(c.problem(), c::problem);
            c.medianNs().forEach((call, ns) -> assertTrue(ns > 0 && Double.isFinite(ns), call + ": " + ns));
            System.out.println("C side: " + c.medianNs());
        }
    }

    /** The lines of the Java side's JVM survive the trip to the bench, and its arguments name what it skips. */
    @Test
    void theJavaSidesLinesAndArgumentsRoundTrip() {
        NativeCallJava.Line call = new NativeCallJava.Line(CudaHotCalls.Binding.FFM, NativeCallJava.Where.VIRTUAL,
                NativeCallBench.Call.MEMCPY, 3318.71234, 0, true);
        assertEquals("JAVA binding=FFM thread=virtual call=cuMemcpyDtoDAsync_v2 ns=3318.7123", call.text());
        assertEquals(new NativeCallJava.Line(CudaHotCalls.Binding.FFM, NativeCallJava.Where.VIRTUAL,
                NativeCallBench.Call.MEMCPY, 3318.7123, 0, true), NativeCallJava.Line.parse(call.text()));
        NativeCallJava.Line c = new NativeCallJava.Line(CudaHotCalls.Binding.FFM, NativeCallJava.Where.C_IN_JVM,
                NativeCallBench.Call.NOTHING, 1.25, 0, true);
        assertEquals("C-IN-JVM binding=FFM call=native_calls_nothing ns=1.2500", c.text());
        assertEquals(c, NativeCallJava.Line.parse(c.text()));
        NativeCallJava.Line warm = new NativeCallJava.Line(CudaHotCalls.Binding.JNA, NativeCallJava.Where.PLATFORM,
                null, 0, 6, false);
        assertEquals("JAVA-WARMUP binding=JNA rounds=6 settled=false", warm.text());
        assertEquals(warm, NativeCallJava.Line.parse(warm.text()));
        assertNull(NativeCallJava.Line.parse("JAVA binding=CUDA thread=platform call=cuEventQuery ns=1.0"));
        assertNull(NativeCallJava.Line.parse("JAVA binding=FFM thread=platform call=cuNothing ns=1.0"));
        assertNull(NativeCallJava.Line.parse("[rank 0] JAVA binding=FFM"));
        NativeCallBench.Options o = NativeCallBench.parse(List.of("--iters", "100", "--rounds", "3", "--device", "1"));
        assertEquals(List.of("JNA", "1", "100", "3", "-", "-"), NativeCallJava.args(CudaHotCalls.Binding.JNA, o,
                Set.of(), null));
        assertEquals(List.of("FFM", "1", "100", "3", "cuStreamWriteValue64_v2", "/tmp/libnative_calls.so"),
                NativeCallJava.args(CudaHotCalls.Binding.FFM, o, Set.of(NativeCallBench.Call.WRITE_VALUE),
                        "/tmp/libnative_calls.so"));
    }

    @Test
    void parsesTheCallAndSkipLinesAndRefusesMissingOrForeignOnes() {
        List<String> lines = List.of("noise", "CALL name=cuEventQuery iters=100 rounds=3 median_ns=80.50 min_ns=79.00",
                "CALL name=cuCtxSetCurrent iters=100 rounds=3 median_ns=12.25 min_ns=12.00",
                "SKIP name=cuStreamWriteValue64_v2 reason=64-bit stream memory operations are off on this GPU",
                "CALL name=cuMemcpyDtoDAsync_v2 iters=100 rounds=3 median_ns=1500.00 min_ns=1400.00",
                "CALL name=cuLaunchKernel iters=100 rounds=3 median_ns=2100.00 min_ns=2000.00",
                "CALL name=native_calls_nothing iters=100 rounds=3 median_ns=1.50 min_ns=1.25");
        NativeCallBench.CSide c = NativeCallBench.parseC(lines, SMALL);
        assertEquals(80.5, c.medianNs().get(NativeCallBench.Call.EVENT_QUERY));
        assertEquals(1.5, c.medianNs().get(NativeCallBench.Call.NOTHING));
        assertEquals(5, c.medianNs().size());
        assertTrue(c.skipped().get(NativeCallBench.Call.WRITE_VALUE).startsWith("64-bit stream"));
        assertThrows(IllegalStateException.class, () -> NativeCallBench.parseC(lines.subList(0, 3), SMALL),
                "a call without a line");
        assertThrows(IllegalStateException.class, () -> NativeCallBench.parseC(List.of(
                "CALL name=cuEventQuery iters=99 rounds=3 median_ns=1 min_ns=1"), SMALL), "other iterations");
        assertThrows(IllegalStateException.class, () -> NativeCallBench.parseC(List.of(
                "CALL name=cuNothing iters=100 rounds=3 median_ns=1 min_ns=1"), SMALL), "an unknown call");
    }

    @Test
    void theTableComparesEachBindingWithCBothWaysAndSaysWhatABindingCostsACall() {
        NativeCallBench.CSide c = new NativeCallBench.CSide(Map.of(NativeCallBench.Call.EVENT_QUERY, 100.0,
                NativeCallBench.Call.CTX_SET_CURRENT, 10.0, NativeCallBench.Call.NOTHING, 1.0),
                Map.of(NativeCallBench.Call.WRITE_VALUE, "off"), null);
        String table = NativeCallBench.callTable(SMALL, c, Map.of(
                CudaHotCalls.Binding.JNA, Map.of(NativeCallBench.Call.EVENT_QUERY, 300.0,
                        NativeCallBench.Call.CTX_SET_CURRENT, 40.0, NativeCallBench.Call.NOTHING, 21.0),
                CudaHotCalls.Binding.FFM, Map.of(NativeCallBench.Call.EVENT_QUERY, 105.0,
                        NativeCallBench.Call.CTX_SET_CURRENT, 12.0, NativeCallBench.Call.NOTHING, 3.5)),
                Map.of(NativeCallBench.Call.CTX_SET_CURRENT, 11.0, NativeCallBench.Call.NOTHING, 1.5));
        assertTrue(table.contains("| cuEventQuery (completed event) | 100.0 | 300.0 | 105.0 | 3.00× | 1.05× | yes "
                + "| n/a | n/a | n/a |"), table);
        assertTrue(table.contains("| cuCtxSetCurrent (context already current) | 10.0 | 40.0 | 12.0 | 4.00× | 1.20× "
                + "| no | 11.0 | 1.09× | yes |"), table);
        assertTrue(table.contains("| native_calls_nothing (an empty C function: the call alone) | 1.0 | 21.0 | 3.5 "
                + "| 21.00× | 3.50× | (floor) | 1.5 | 2.33× | (floor) |"), table);
        assertTrue(table.contains("| cuStreamWriteValue64_v2 | skipped: off |"), table);
        assertTrue(table.contains("| cuLaunchKernel (empty kernel, one enqueue) | n/a | n/a | n/a | n/a | n/a | n/a "
                + "| n/a | n/a | n/a |"), table);
        // the floor in FFM's JVM where measured there: FFM adds 2.0, JNA 19.5; 1.1x of 11.0 leaves 1.1
        assertTrue(table.contains("(its empty-function figure less C's, 1.5 ns): FFM critical +2.0 ns, JNA +19.5 ns;"
                + " 1.1× of cuCtxSetCurrent's C figure (11.0 ns) leaves 1.1 ns"), table);
        String without = NativeCallBench.callTable(SMALL, c, Map.of(), Map.of());
        assertFalse(without.contains("the binding's own cost"), without);
    }

    @Test
    void theThreadTablePutsTheVirtualThreadBesideThePlatformOne() {
        NativeCallBench.JavaSide java = new NativeCallBench.JavaSide(Map.of(
                org.jmscclpp.nativebridge.CudaHotCalls.Binding.FFM, Map.of(NativeCallBench.Call.EVENT_QUERY, 1000.0,
                        NativeCallBench.Call.MEMCPY, 4000.0)),
                Map.of(NativeCallBench.Call.EVENT_QUERY, 1500.0, NativeCallBench.Call.MEMCPY, 6000.0), Map.of(),
                new NativeCallBench.WarmUps());
        String table = NativeCallBench.threadTable(SMALL, java);
        assertTrue(table.contains("| call, FFM | platform thread ns | virtual thread ns | virtual/platform |"), table);
        assertTrue(table.contains("| cuEventQuery | 1000.0 | 1500.0 | 1.50× |"), table);
        assertTrue(table.contains("| cuMemcpyDtoDAsync_v2 | 4000.0 | 6000.0 | 1.50× |"), table);
        assertTrue(table.contains("| cuLaunchKernel | n/a | n/a | n/a |"), table);
    }

    @Test
    void theWarmUpsSayHowManyRoundsTheMostTookAndWhichDidNotSettle() {
        NativeCallBench.WarmUps warmUps = new NativeCallBench.WarmUps();
        warmUps.add(2, true);
        warmUps.add(5, true);
        assertTrue(warmUps.describe().startsWith("2 to 5 untimed rounds before each of the 2 measured"), warmUps.describe());
        assertTrue(warmUps.describe().endsWith("settled before every one"), warmUps.describe());
        warmUps.add(12, false);
        assertTrue(warmUps.describe().contains("2 to 12 untimed rounds before each of the 3"), warmUps.describe());
        assertTrue(warmUps.describe().endsWith("still compiling before 1"), warmUps.describe());
    }

    @Test
    void withoutAGpuItSaysWhyAndExitsWithTwo() {
        Assumptions.assumeTrue(CudaBackend.unavailableReason(1).isPresent(), "a GPU is here");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = NativeCallBench.run(List.of("--iters", "10"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(ExitCodes.USAGE, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith(
                "jmscclpp bench native: the cuda backend is unavailable here: "), err.toString(StandardCharsets.UTF_8));
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        assertTrue(CudaDriver.unavailableReason().isPresent() || CudaBackend.unavailableReason(1).isPresent());
    }

    @Test
    void badOptionsAreAUsageError() {
        for (List<String> args : List.of(List.of("--iters"), List.of("--iters", "x"), List.of("--rounds", "0"),
                List.of("--backend", "tpu"), List.of("--what", "1"), List.of("--backend", "host", "--idle-seconds", "0"))) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(ExitCodes.USAGE, NativeCallBench.run(args, new PrintStream(new ByteArrayOutputStream()),
                    new PrintStream(err, true, StandardCharsets.UTF_8)), args.toString());
            assertTrue(err.toString(StandardCharsets.UTF_8).contains("usage: " + NativeCallBench.SYNOPSIS), args.toString());
        }
    }

    /**
     * The idle proxy on the host backend, for real: a table with a row per poller and the poller's threads' own
     * figure (the platform poller's thread, the virtual-thread scheduler's). Whether it is below 5% of a core is
     * the benchmark's finding, not this test's: it depends on the load.
     */
    @Test
    @Timeout(60)
    void anIdleProxyOnTheHostBackendTakesLittleCpu() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = NativeCallBench.run(List.of("--backend", "host", "--idle-seconds", "2"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String table = out.toString(StandardCharsets.UTF_8);
        System.out.println(table);
        assertEquals(ExitCodes.OK, code, err.toString(StandardCharsets.UTF_8));
        assertTrue(table.contains("| no proxy service (the JVM at rest) |"), table);
        assertTrue(table.contains("| VIRTUAL_THREAD |") && table.contains("| PLATFORM_THREAD |"), table);
        for (String poller : new String[] {"| PLATFORM_THREAD |", "| VIRTUAL_THREAD |"}) {
            String row = table.lines().filter(l -> l.startsWith(poller)).findFirst().orElseThrow();
            double threadPercent = Double.parseDouble(row.split("\\|")[4].strip());
            assertTrue(threadPercent >= 0 && threadPercent <= 100 * Runtime.getRuntime().availableProcessors(), row);
            assertTrue(row.endsWith(threadPercent < NativeCallBench.IDLE_TARGET_PERCENT ? "| yes |" : "| no |"), row);
        }
    }
}
