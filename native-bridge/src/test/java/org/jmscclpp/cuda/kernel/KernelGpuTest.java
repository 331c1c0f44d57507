package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaInternals;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Module loading and kernel launches on the first GPU; skipped (with the reason) without one. */
@Tag("gpu")
class KernelGpuTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final long TEN_SECONDS_NS = 10_000_000_000L;

    private static GpuKernels gpu;

    @BeforeAll
    static void openGpu(@TempDir Path cache) {
        gpu = GpuKernels.open(cache);
    }

    @AfterAll
    static void closeGpu() {
        if (gpu != null) {
            gpu.close();
        }
    }

    @Test
    void runScalesAnArrayInMappedHostMemory() {
        int n = 1000;
        try (GpuKernels.Mapped data = gpu.mapped(n * 4L)) {
            for (int i = 0; i < n; i++) {
                data.host().setFloat(i * 4L, i);
            }
            Kernel scale = gpu.module.function("scale");
            assertSame(scale, gpu.module.function("scale"));
            KernelArgs args = KernelArgs.builder().pointer(data.device()).i32(n).f32(2.5f).build();
            StepVerifier.create(scale.run(LaunchConfig.of((n + 255) / 256, 256), args, DEADLINE))
                    .verifyComplete();
            for (int i = 0; i < n; i++) {
                assertEquals(i * 2.5f, data.host().getFloat(i * 4L), "element " + i);
            }
            // the same args again: the driver copied them, nothing was consumed
            StepVerifier.create(scale.run(LaunchConfig.of((n + 255) / 256, 256), args, DEADLINE)).verifyComplete();
            assertEquals(999 * 6.25f, data.host().getFloat(999 * 4L));
        }
    }

    @Test
    void runIsLazy() {
        try (GpuKernels.Mapped data = gpu.mapped(4)) {
            data.host().setFloat(0, 3f);
            Mono<Void> run = gpu.module.function("scale").run(LaunchConfig.of(1, 1),
                    KernelArgs.builder().pointer(data.device()).i32(1).f32(2f).build(), DEADLINE);
            assertEquals(3f, data.host().getFloat(0), "nothing ran before subscription");
            StepVerifier.create(run).verifyComplete();
            StepVerifier.create(run).verifyComplete();
            assertEquals(12f, data.host().getFloat(0), "each subscription launches once");
        }
    }

    @Test
    void structsAndDoublesArriveByValue() {
        try (GpuKernels.Mapped out = gpu.mapped(4 * 8)) {
            KernelArgs args = KernelArgs.builder()
                    .handle(16, b -> b.putLong(-1234567890123L).putInt(7).putInt(-9))
                    .f64(2.25)
                    .pointer(out.device())
                    .build();
            StepVerifier.create(gpu.module.function("takeStruct").run(LaunchConfig.of(1, 1), args, DEADLINE))
                    .verifyComplete();
            assertEquals(-1234567890123L, out.host().getLong(0));
            assertEquals(7, out.host().getLong(8));
            assertEquals(-9, out.host().getLong(16));
            assertEquals(9, out.host().getLong(24));
        }
    }

    @Test
    void moreThan48KiBOfSharedMemoryIsAllowedOnDemand() {
        int n = 24 * 1024; // 96 KiB of ints
        try (GpuKernels.Mapped out = gpu.mapped(8)) {
            KernelArgs args = KernelArgs.builder().pointer(out.device()).i32(n).build();
            StepVerifier.create(gpu.module.function("sharedSum")
                            .run(LaunchConfig.of(1, 256).withSharedMemory(n * 4), args, DEADLINE))
                    .verifyComplete();
            assertEquals((long) n * (n - 1) / 2, out.host().getLong(0));
        }
    }

    @Test
    void aLaunchTheDeviceCannotTakeIsASystemErrorNamingTheKernel() {
        try (GpuKernels.Mapped out = gpu.mapped(8)) {
            KernelArgs args = KernelArgs.builder().pointer(out.device()).i32(1).build();
            StepVerifier.create(gpu.module.function("sharedSum")
                            .run(LaunchConfig.of(1, 32).withSharedMemory(1 << 30), args, DEADLINE))
                    .expectErrorSatisfies(e -> {
                        JmscclppException j = assertInstanceOf(JmscclppException.class, e);
                        assertEquals(ErrorCode.SYSTEM_ERROR, j.code());
                        assertTrue(j.getMessage().contains("sharedSum<<<(1, 1, 1), (32, 1, 1), 1073741824>>>"),
                                j.getMessage());
                        assertTrue(j.getMessage().contains("CUDA_ERROR_"), j.getMessage());
                    })
                    .verify(DEADLINE);
        }
    }

    @Test
    void concurrentRunsOfOneKernelOverlap() {
        // each run waits for the other: they finish only if they run at the same time, on two streams
        try (GpuKernels.Mapped flags = gpu.mapped(8); GpuKernels.Mapped result = gpu.mapped(8)) {
            Kernel handshake = gpu.module.function("handshake");
            Mono<Void> first = handshake.run(LaunchConfig.of(1, 1), KernelArgs.builder().pointer(flags.device())
                    .pointer(result.device()).i32(0).i32(1).i64(TEN_SECONDS_NS).build(), DEADLINE);
            Mono<Void> second = handshake.run(LaunchConfig.of(1, 1), KernelArgs.builder().pointer(flags.device())
                    .pointer(result.device()).i32(1).i32(0).i64(TEN_SECONDS_NS).build(), DEADLINE);
            StepVerifier.create(Mono.when(first, second)).verifyComplete();
            assertEquals(1, result.host().getInt(0), "the first run saw the second's flag");
            assertEquals(1, result.host().getInt(4), "the second run saw the first's flag");
            // the streams go back after the completion reached the subscriber
            assertTrue(Waiting.await(() -> CudaInternals.idleStreams(gpu.module.streams()) >= 2, Waiting.deadline(DEADLINE)),
                    "both streams went back to the pool");
        }
    }

    @Test
    void aKernelStillRunningAtTheDeadlineIsATimeout() {
        try (GpuKernels.Mapped flag = gpu.mapped(4); GpuKernels.Mapped done = gpu.mapped(4)) {
            KernelArgs args = KernelArgs.builder().pointer(flag.device()).pointer(done.device()).i64(TEN_SECONDS_NS)
                    .build();
            StepVerifier.create(gpu.module.function("waitFlag").run(LaunchConfig.of(1, 1), args,
                            Duration.ofMillis(300)))
                    .expectErrorSatisfies(e -> {
                        JmscclppException j = assertInstanceOf(JmscclppException.class, e);
                        assertEquals(ErrorCode.TIMEOUT, j.code());
                        assertTrue(j.getMessage().contains("kernel waitFlag<<<(1, 1, 1), (1, 1, 1), 0>>>"),
                                j.getMessage());
                    })
                    .verify(DEADLINE);
            assertEquals(0, done.host().getInt(0), "the kernel was still waiting");
            flag.host().setInt(0, 1);
            assertTrue(Waiting.await(() -> done.host().getInt(0) != 0, Waiting.deadline(DEADLINE)));
            assertEquals(1, done.host().getInt(0), "the kernel saw the flag and ended");
            gpu.context.makeCurrent();
            CudaDriver.check(CudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
        }
    }

    @Test
    void unknownKernelsAndClosedModulesAreInvalidUsage() {
        JmscclppException unknown = assertThrows(JmscclppException.class, () -> gpu.module.function("nope"));
        assertEquals(ErrorCode.INVALID_USAGE, unknown.code());
        assertTrue(unknown.getMessage().contains("'nope'"), unknown.getMessage());

        CudaModule other = CudaModule.load(gpu.context, gpu.compiled);
        Kernel scale = other.function("scale");
        other.close();
        other.close();
        assertTrue(other.isClosed());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> other.function("scale")).code());
        StepVerifier.create(scale.run(LaunchConfig.of(1, 1), KernelArgs.builder().pointer(0).i32(0).f32(1).build(),
                        DEADLINE))
                .expectErrorSatisfies(e -> assertEquals(ErrorCode.INVALID_USAGE,
                        assertInstanceOf(JmscclppException.class, e).code()))
                .verify(DEADLINE);
    }

    @Test
    void aFaultingKernelIsASystemErrorWithTheDriversName(@TempDir Path dir) throws Exception {
        // a fault loses the whole context, so it happens in a JVM of its own
        Path log = dir.resolve("fault.log");
        try (ChildJvm child = ChildJvm.start(log, KernelFaultChild.class, dir.resolve("cache").toString())) {
            int exit = child.waitFor(Duration.ofMinutes(2));
            assertEquals(0, exit, child.output());
            List<String> lines = child.linesStartingWith("FAULT ");
            assertEquals(1, lines.size(), child.output());
            String line = lines.getFirst();
            assertTrue(line.startsWith("SYSTEM_ERROR "), line);
            assertTrue(line.contains("kernel fault<<<(1, 1, 1), (1, 1, 1), 0>>> failed"), line);
            assertTrue(line.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), line);
        }
        assertTrue(Files.exists(log));
    }
}
