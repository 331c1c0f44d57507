package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.kernel.CudaModule;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link CudaGraph} on one GPU: a captured sequence of launches runs only when the graph is
 * launched, and as often; a capture that fails ends, cleans up, names its step and leaves the
 * stream usable; {@link CudaStream#elapsedMillis} times a replay. Aborted with the reason where
 * there is no GPU.
 */
@Tag("gpu")
class CudaGraphGpuTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final String SOURCE = """
            extern "C" __global__ void bump(unsigned long long* counter) {
                atomicAdd(counter, 1ULL);
            }
            """;

    private static CudaBackend backend;
    private static CudaModule module;
    private static Kernel bump;

    private DeviceBuffer counter;
    private CudaStream stream;

    @BeforeAll
    static void openGpu() {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        backend = CudaBackend.open(0, CudaBackend.Allocation.MEM_ALLOC);
        module = DeviceKernels.load(backend, "graph-test", SOURCE);
        bump = module.function("bump");
    }

    @AfterAll
    static void closeGpu() {
        if (module != null) {
            module.close();
        }
        if (backend != null) {
            backend.close();
        }
    }

    @BeforeEach
    void counterAndStream() {
        counter = backend.allocate(Long.BYTES);
        stream = backend.createStream("graph test");
    }

    @AfterEach
    void release() {
        stream.close();
        counter.close();
    }

    @Test
    void tenCapturedLaunchesReplayedThreeTimesCountThirty() {
        CudaGraph graph = CudaGraph.capture(stream, () -> {
            for (int i = 0; i < 10; i++) {
                launchBump();
            }
        });
        try {
            stream.synchronize(TIMEOUT, "the capture");
            assertEquals(0, counter(), "capturing runs nothing");
            for (int replay = 1; replay <= 3; replay++) {
                graph.launch(stream);
            }
            stream.synchronize(TIMEOUT, "three replays");
            assertEquals(30, counter());
        } finally {
            graph.close();
        }
        graph.close();
        JmscclppException closed = assertThrows(JmscclppException.class, () -> graph.launch(stream));
        assertEquals(ErrorCode.INVALID_USAGE, closed.code());
    }

    @Test
    void aFailingEnqueueEndsTheCaptureAndLeavesTheStreamUsable() {
        IllegalStateException planted = new IllegalStateException("planted");
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaGraph.capture(stream, () -> {
            launchBump();
            throw planted;
        }));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
        assertTrue(e.detail().contains("enqueue failed"), e.detail());
        assertEquals(planted, e.getCause());
        assertFalse(stream.isCapturing(), "the capture was ended");

        launchBump();
        stream.synchronize(TIMEOUT, "a launch after the failed capture");
        assertEquals(1, counter(), "the launch captured before the failure never ran; the one after did");

        try (CudaGraph again = CudaGraph.capture(stream, () -> {
            launchBump();
            launchBump();
        })) {
            again.launch(stream);
            stream.synchronize(TIMEOUT, "a graph captured after the failed one");
        }
        assertEquals(3, counter());
    }

    @Test
    void aCaptureThatCannotBeginNamesTheDriverCall() {
        JmscclppException outer = assertThrows(JmscclppException.class, () -> CudaGraph.capture(stream,
                () -> CudaGraph.capture(stream, this::launchBump).close()));
        assertEquals(ErrorCode.SYSTEM_ERROR, outer.code());
        assertTrue(outer.detail().contains("enqueue failed"), outer.detail());
        JmscclppException inner = assertInstanceOf(JmscclppException.class, outer.getCause());
        assertEquals(ErrorCode.SYSTEM_ERROR, inner.code());
        assertTrue(inner.detail().contains("cuStreamBeginCapture_v2"), inner.detail());
        assertFalse(stream.isCapturing(), "the outer capture was ended");
        launchBump();
        stream.synchronize(TIMEOUT, "a launch after the failed captures");
        assertEquals(1, counter());
    }

    @Test
    void elapsedMillisTimesAReplay() {
        try (CudaGraph graph = CudaGraph.capture(stream, () -> {
            for (int i = 0; i < 100; i++) {
                launchBump();
            }
        })) {
            float ms = stream.elapsedMillis(() -> graph.launch(stream), TIMEOUT, "a replay of 100 launches");
            assertTrue(ms > 0 && ms < TIMEOUT.toMillis(), "elapsed " + ms + " ms");
            assertEquals(100, counter());
            System.out.println("a graph of 100 one-thread launches replayed in " + ms * 1000 + " µs");
        }
    }

    @Test
    void aClosedStreamCannotBeCaptured() {
        CudaStream other = backend.createStream("closed");
        other.close();
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaGraph.capture(other, () -> { }));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
    }

    private void launchBump() {
        stream.launch(bump, LaunchConfig.of(1, 1), KernelArgs.builder().pointer(counter.address()).build());
    }

    private long counter() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(Long.BYTES, Long.BYTES);
            backend.copyToHost(host, counter, 0);
            return host.get(ValueLayout.JAVA_LONG, 0);
        }
    }
}
