package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.cli.MainRun;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.samples.ExitCodes;
import org.junit.jupiter.api.Test;

/** The CPU side of {@code jmscclpp bench proxy --backend cuda}: arguments, the missing-GPU exit, the report. */
class CudaProxyBenchTest {

    private static final CudaProxyBench.Options DEFAULTS = CudaProxyBench.parse(List.of());

    @Test
    void backendIsHostByDefaultAndTakenOutOfTheOptions() {
        ProxyBench.Selection none = ProxyBench.select(List.of("--iters", "5", "--rounds", "2"));
        assertEquals(ProxyBench.BackendChoice.HOST, none.backend());
        assertEquals(List.of("--iters", "5", "--rounds", "2"), none.rest());
        ProxyBench.Selection host = ProxyBench.select(List.of("--iters", "5", "--backend", "host"));
        assertEquals(ProxyBench.BackendChoice.HOST, host.backend());
        assertEquals(List.of("--iters", "5"), host.rest());
        ProxyBench.Selection cuda = ProxyBench.select(List.of("--backend", "cuda", "--iters", "7"));
        assertEquals(ProxyBench.BackendChoice.CUDA, cuda.backend());
        assertEquals(List.of("--iters", "7"), cuda.rest());
    }

    @Test
    void badBackendArgumentsAreRefused() {
        assertEquals("--backend is host or cuda, got 'gpu'", assertThrows(IllegalArgumentException.class,
                () -> ProxyBench.select(List.of("--backend", "gpu"))).getMessage());
        assertEquals("Missing required parameter for option '--backend' (host|cuda)",
                assertThrows(IllegalArgumentException.class,
                        () -> ProxyBench.select(List.of("--iters", "3", "--backend"))).getMessage());
        assertEquals("--triggers is not an option of --backend cuda", assertThrows(IllegalArgumentException.class,
                () -> ProxyBench.select(List.of("--backend=cuda", "--triggers", "3"))).getMessage());
        assertEquals(new ProxyBench.Selection(ProxyBench.BackendChoice.CUDA, List.of("--iters", "3", "--calls", "5")),
                ProxyBench.select(List.of("--iters=3", "--backend", "cuda", "--calls", "5")));
        MainRun r = MainRun.of("bench", "proxy", "--backend", "rocm");
        assertEquals(ExitCodes.USAGE, r.code());
        assertTrue(r.err().contains("jmscclpp bench proxy: --backend is host or cuda, got 'rocm'"), r.err());
        assertTrue(r.err().contains("Usage: jmscclpp bench proxy"), r.err());
    }

    @Test
    void cudaOptionsParseAndTravelToTheRanks() {
        assertEquals(new CudaProxyBench.Options(10_000, 20_000, 200, 128, 100_000), DEFAULTS);
        CudaProxyBench.Options o = CudaProxyBench.parse(List.of("--iters", "50", "--warmup", "0", "--bw-iters", "3",
                "--bw-mib", "8", "--calls", "1000"));
        assertEquals(new CudaProxyBench.Options(50, 0, 3, 8, 1000), o);
        assertEquals(o, CudaProxyBench.parse(CudaProxyBench.args(o)));
        assertEquals("--rounds is not an option of --backend cuda", assertThrows(IllegalArgumentException.class,
                () -> ProxyBench.select(List.of("--backend", "cuda", "--rounds", "5"))).getMessage());
        assertThrows(IllegalArgumentException.class, () -> CudaProxyBench.parse(List.of("--rounds", "5")));
        assertThrows(IllegalArgumentException.class, () -> CudaProxyBench.parse(List.of("--iters", "0")));
    }

    @Test
    void anUnavailableBackendFailsFastWithExitCode2() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = CudaProxyBench.run(List.of("--iters", "10"), o, e, () -> Optional.of("no GPU in this test"));
        }
        assertEquals(ExitCodes.USAGE, code);
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        assertEquals("jmscclpp bench proxy: the cuda backend is unavailable here: no GPU in this test\n",
                err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void badCudaOptionsAreAUsageErrorBeforeLookingForAGpu() {
        AtomicBoolean asked = new AtomicBoolean();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = CudaProxyBench.run(List.of("--triggers", "10"), o, e, () -> {
                asked.set(true);
                return Optional.empty();
            });
        }
        assertEquals(ExitCodes.USAGE, code);
        assertTrue(!asked.get(), "no GPU lookup for bad arguments");
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("usage: " + CudaProxyBench.SYNOPSIS), err.toString());
    }

    /** On a host without the CUDA driver (this build's machines) the real check refuses before any rank starts. */
    @Test
    void withoutAGpuHereTheCommandLineSaysWhyAndExits2() {
        Optional<String> reason = CudaBackend.unavailableReason(2);
        assumeTrue(reason.isPresent(), "this host has 2 GPUs");
        long start = System.nanoTime();
        MainRun r = MainRun.of("bench", "proxy", "--backend", "cuda");
        assertEquals(ExitCodes.USAGE, r.code(), r.err());
        assertEquals("jmscclpp bench proxy: the cuda backend is unavailable here: " + reason.get() + "\n", r.err());
        assertEquals("", r.out());
        assertTrue(System.nanoTime() - start < 10_000_000_000L, "fails fast");
    }

    @Test
    void resultLinesBecomeTheTables() {
        List<String> lines = List.of(
                CudaProxyBenchRankSample.line("fifo_us", "kernel", 10000, 1.5),
                CudaProxyBenchRankSample.line("fifo_us", "wall", 10000, 2.25),
                CudaProxyBenchRankSample.line("d2d_us", "-", 10000, 1.36),
                CudaProxyBenchRankSample.line("port_rtt_us", "VIRTUAL_THREAD", 10000, 20.0),
                CudaProxyBenchRankSample.line("port_rtt_us", "PLATFORM_THREAD", 10000, 8.8),
                CudaProxyBenchRankSample.line("port_bw_gbps", "VIRTUAL_THREAD", 20, 380.0),
                CudaProxyBenchRankSample.line("port_bw_gbps", "PLATFORM_THREAD", 20, 184.0),
                CudaProxyBenchRankSample.line("ll8_us", "-", 10000, 1.4),
                "some other output",
                CudaProxyBenchRankSample.line("ll16_us", "-", 10000, 3.28),
                CudaProxyBenchRankSample.hotLine("cuEventQuery", 100000, 612.25),
                CudaProxyBenchRankSample.hotLine("CudaStream.isDone", 100000, 1250),
                CudaProxyBenchRankSample.hotLine("cuCtxSetCurrent", 100000, 480.04),
                CudaProxyBenchRankSample.hotLine("cuStreamWriteValue64_v2", 100000, 1900.5),
                CudaProxyBenchRankSample.loopLine("VIRTUAL_THREAD", 20000, 5123.456),
                CudaProxyBenchRankSample.loopLine("PLATFORM_THREAD", 20002, 4990.0));
        CudaProxyBench.Report report = CudaProxyBench.report(DEFAULTS, lines);
        assertEquals(List.of(), report.missing());
        String expected = """
                | measure                                                                  | jmscclpp | MSCCL++ C++ 0.10 (2xH200, GPU-HOSTS.md) | ratio | target met |
                | ------------------------------------------------------------------------ | -------: | --------------------------------------: | ----: | ---------- |
                | FIFO push→poll per trigger, kernel timer, µs                             |     1.50 |                                    1.81 |  0.83 | yes        |
                | FIFO push→poll per trigger, host wall clock, µs                          |     2.25 |                                    1.81 |  1.24 | no         |
                | d2d semaphore one-way, µs                                                |     1.36 |                                    1.36 |  1.00 | yes        |
                | PortChannel CUDA-IPC round trip 1 int, virtual-thread poller, µs         |    20.00 |                                   17.60 |  1.14 | no         |
                | PortChannel CUDA-IPC round trip 1 int, platform-thread (1 ms idle spin) poller, µs        |     8.80 |                                   17.60 |  0.50 | yes        |
                | PortChannel bidirectional 128 MiB, per direction, virtual-thread poller, GB/s  |    380.0 |                                   368.0 |  1.03 | yes        |
                """;
        // the widest label decides the first column: compare row by row, ignoring padding
        List<String> table = report.text().lines().toList();
        assertEquals(normalise(expected.lines().toList().get(0)), normalise(table.get(0)));
        assertTrue(table.get(1).matches("\\| -+ \\| -+: \\| -+: \\| -+: \\| -+ \\|"), table.get(1));
        List<String> rows = expected.lines().skip(2).map(CudaProxyBenchTest::normalise).toList();
        for (int i = 0; i < rows.size(); i++) {
            assertEquals(rows.get(i), normalise(table.get(2 + i)));
        }
        assertEquals("| PortChannel bidirectional 128 MiB, per direction, platform-thread (1 ms idle spin) poller, GB/s | 184.0 | 368.0 | 0.50"
                + " | no |", normalise(table.get(8)));
        assertEquals("| MemoryChannel LL8 4 KiB one-way, µs | 1.40 | 1.40 | 1.00 | yes |", normalise(table.get(9)));
        assertEquals("| MemoryChannel LL16 4 KiB one-way, µs | 3.28 | 1.64 | 2.00 | no |", normalise(table.get(10)));
        assertEquals("", table.get(11));
        assertEquals("target: jmscclpp <= MSCCL++ for times, >= for bandwidth: met on 5 of 9 rows (not met: FIFO"
                + " push→poll per trigger, host wall clock, µs; PortChannel CUDA-IPC round trip 1 int, virtual-thread"
                + " poller, µs; PortChannel bidirectional 128 MiB, per direction, platform-thread (1 ms idle spin) poller, GB/s;"
                + " MemoryChannel LL16 4 KiB one-way, µs)", table.get(12));
        assertTrue(table.get(13).startsWith("MSCCL++ figures: MSCCL++ C++ 0.10 on the 2xH200 host"), table.get(13));
        assertTrue(table.get(13).endsWith("constants, not measured in this run"), table.get(13));
        assertEquals("", table.get(14));
        assertEquals("| hot binding, per call from Java (rank 0, 100000 calls) | ns |", normalise(table.get(15)));
        assertEquals("| cuEventQuery, completed event | 612.3 |", normalise(table.get(17)));
        assertEquals("| CudaStream.isDone (cuCtxSetCurrent + cuEventQuery) | 1250.0 |", normalise(table.get(18)));
        assertEquals("| cuCtxSetCurrent (CudaContext.makeCurrent) | 480.0 |", normalise(table.get(19)));
        assertEquals("| cuStreamWriteValue64_v2, one enqueue | 1900.5 |", normalise(table.get(20)));
        assertEquals("", table.get(21));
        assertEquals("| rank 0's proxy loop in the timed round trips, poller | triggers | ns per trigger (its transports'"
                + " calls included) |", normalise(table.get(22)));
        assertEquals("| VIRTUAL_THREAD | 20000 | 5123.5 |", normalise(table.get(24)));
        assertEquals("| PLATFORM_THREAD | 20002 | 4990.0 |", normalise(table.get(25)));
        assertEquals(26, table.size(), report.text());
    }

    @Test
    void missingResultsAreNamed() {
        CudaProxyBench.Report report = CudaProxyBench.report(CudaProxyBench.parse(List.of("--bw-mib", "64")), List.of(
                CudaProxyBenchRankSample.line("d2d_us", "-", 10, 1.0),
                CudaProxyBenchRankSample.line("port_bw_gbps", "PLATFORM_THREAD", 20, 300.0)));
        assertEquals(8, report.missing().size(), report.missing().toString());
        assertTrue(report.missing().contains("PortChannel bidirectional 64 MiB, per direction, virtual-thread poller, GB/s"),
                report.missing().toString());
        assertEquals("hot bindings", report.missing().getLast());
        assertTrue(report.text().contains("met on 1 of 2 rows"), report.text());
        assertTrue(report.text().lines().anyMatch(l -> normalise(l).equals(
                "| FIFO push→poll per trigger, kernel timer, µs | n/a | 1.81 | n/a | n/a |")), report.text());
        assertTrue(report.text().lines().anyMatch(l -> normalise(l).equals("| cuEventQuery, completed event | n/a |")),
                report.text());
    }

    private static String normalise(String row) {
        return row.strip().replaceAll(" +", " ");
    }
}
