package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.sun.jna.Memory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.CudaHotCalls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each hot CUDA call through each binding ({@link CudaHotCalls#jna()}, {@link CudaHotCalls#ffm()}) on a real GPU,
 * checked by its effect: an event query says NOT_READY while a kernel spins and SUCCESS after, a stream write
 * lands in device memory, a copy copies, a launch runs a kernel that stores its argument. Aborted with the reason
 * where there is no driver or no GPU.
 */
@Tag("gpu")
class CudaHotCallsGpuTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** {@code jmscclpp_store(u64* p, u64 v)}: {@code *p = v}; {@code jmscclpp_spin(u64 ns)}: spins on %globaltimer. */
    private static final String PTX = """
            .version 7.0
            .target sm_75
            .address_size 64
            .visible .entry jmscclpp_store(.param .u64 p_ptr, .param .u64 p_value)
            {
                .reg .b64 %rd<4>;
                ld.param.u64 %rd1, [p_ptr];
                ld.param.u64 %rd2, [p_value];
                cvta.to.global.u64 %rd3, %rd1;
                st.global.u64 [%rd3], %rd2;
                ret;
            }
            .visible .entry jmscclpp_spin(.param .u64 p_ns)
            {
                .reg .b64 %rd<4>;
                .reg .pred %p;
                ld.param.u64 %rd1, [p_ns];
                mov.u64 %rd2, %globaltimer;
                add.u64 %rd2, %rd2, %rd1;
            SPIN:
                mov.u64 %rd3, %globaltimer;
                setp.lt.u64 %p, %rd3, %rd2;
                @%p bra SPIN;
                ret;
            }
            """;

    private static CudaBackend backend;
    private static long module;
    private static long store;
    private static long spin;

    @BeforeAll
    static void open() {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        backend = CudaBackend.open(0, CudaBackend.Allocation.MEM_ALLOC);
        backend.context().makeCurrent();
        long[] out = new long[1];
        CudaDriver.check(CudaDriver.cuModuleLoadData(out, (PTX + "\0").getBytes(StandardCharsets.US_ASCII)),
                "cuModuleLoadData");
        module = out[0];
        CudaDriver.check(CudaDriver.cuModuleGetFunction(out, module, "jmscclpp_store"), "cuModuleGetFunction");
        store = out[0];
        CudaDriver.check(CudaDriver.cuModuleGetFunction(out, module, "jmscclpp_spin"), "cuModuleGetFunction");
        spin = out[0];
        System.out.println("GPU test on " + backend + "; the library's hot calls go through "
                + CudaDriver.hotCalls().binding());
    }

    @AfterAll
    static void close() {
        if (backend != null) {
            if (module != 0) {
                backend.context().makeCurrent();
                CudaDriver.cuModuleUnload(module);
            }
            backend.close();
        }
    }

    @Test
    void theLibraryUsesFfmUnlessToldOtherwise() {
        assertSame(CudaHotCalls.requested(System.getProperty(CudaHotCalls.PROPERTY), System.getenv(CudaHotCalls.ENV)),
                CudaDriver.hotCalls().binding());
    }

    @ParameterizedTest
    @EnumSource(CudaHotCalls.Binding.class)
    void anEventQueryIsNotReadyWhileAKernelSpinsAndSuccessAfter(CudaHotCalls.Binding binding) {
        CudaHotCalls hot = CudaHotCalls.of(binding);
        try (CudaStream stream = new CudaStream(backend.context(), "hot calls test");
             Memory argument = new Memory(Long.BYTES); Memory params = new Memory(Long.BYTES)) {
            argument.setLong(0, Duration.ofMillis(300).toNanos());
            params.setPointer(0, argument);
            assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuCtxSetCurrent(contextHandle()));
            assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream.handle(), params,
                    null));
            long event = stream.record();
            try {
                assertEquals(CudaDriver.CUDA_ERROR_NOT_READY, hot.cuEventQuery(event), "while the kernel spins");
                stream.synchronize(TIMEOUT, "the spinning kernel");
                assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuEventQuery(event), "after the kernel");
            } finally {
                stream.release(event);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(CudaHotCalls.Binding.class)
    void aStreamWriteLandsInDeviceMemory(CudaHotCalls.Binding binding) {
        Assumptions.assumeTrue(backend.context().supportsStreamMemOps64(), "no 64-bit stream memory operations");
        CudaHotCalls hot = CudaHotCalls.of(binding);
        try (CudaStream stream = new CudaStream(backend.context(), "hot calls test");
             DeviceBuffer words = backend.allocate(2 * Long.BYTES); Arena arena = Arena.ofConfined()) {
            long value = 0x0123_4567_89AB_CDEFL ^ binding.ordinal();
            assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuStreamWriteValue64_v2(stream.handle(), words.address()
                    + Long.BYTES, value, CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT));
            stream.synchronize(TIMEOUT, "the stream write");
            MemorySegment back = arena.allocate(2 * Long.BYTES);
            backend.copyToHost(back, words, 0);
            assertEquals(0L, back.getAtIndex(ValueLayout.JAVA_LONG, 0), "the word before is untouched");
            assertEquals(value, back.getAtIndex(ValueLayout.JAVA_LONG, 1));
        }
    }

    @ParameterizedTest
    @EnumSource(CudaHotCalls.Binding.class)
    void anAsyncDeviceCopyCopies(CudaHotCalls.Binding binding) {
        CudaHotCalls hot = CudaHotCalls.of(binding);
        int size = (1 << 20) + 24;
        byte[] data = new byte[size];
        new Random(size + binding.ordinal()).nextBytes(data);
        try (CudaStream stream = new CudaStream(backend.context(), "hot calls test");
             DeviceBuffer src = backend.allocate(size); DeviceBuffer dst = backend.allocate(size)) {
            backend.copyFromHost(src, 0, MemorySegment.ofArray(data));
            assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuMemcpyDtoDAsync_v2(dst.address() + 8, src.address(), size - 8,
                    stream.handle()));
            stream.synchronize(TIMEOUT, "the copy");
            byte[] back = new byte[size];
            backend.copyToHost(MemorySegment.ofArray(back), dst, 0);
            assertArrayEquals(new byte[8], Arrays.copyOf(back, 8), "before the destination offset");
            assertArrayEquals(Arrays.copyOf(data, size - 8), Arrays.copyOfRange(back, 8, size));
        }
    }

    @ParameterizedTest
    @EnumSource(CudaHotCalls.Binding.class)
    void aLaunchRunsTheKernelWithItsArguments(CudaHotCalls.Binding binding) {
        CudaHotCalls hot = CudaHotCalls.of(binding);
        try (CudaStream stream = new CudaStream(backend.context(), "hot calls test");
             DeviceBuffer word = backend.allocate(Long.BYTES); Arena arena = Arena.ofConfined();
             Memory arguments = new Memory(2 * Long.BYTES); Memory params = new Memory(2 * Long.BYTES)) {
            long value = -0x7EDC_BA98_7654_3210L + binding.ordinal();
            arguments.setLong(0, word.address());
            arguments.setLong(Long.BYTES, value);
            params.setPointer(0, arguments);
            params.setPointer(Long.BYTES, arguments.share(Long.BYTES));
            assertEquals(CudaDriver.CUDA_SUCCESS, hot.cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, stream.handle(),
                    params, null));
            stream.synchronize(TIMEOUT, "the store kernel");
            MemorySegment back = arena.allocate(Long.BYTES);
            backend.copyToHost(back, word, 0);
            assertEquals(value, back.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** The backend's context: GPU 0's primary context, retained and released again (the backend holds it). */
    private static long contextHandle() {
        int[] device = new int[1];
        CudaDriver.check(CudaDriver.cuDeviceGet(device, 0), "cuDeviceGet");
        long[] context = new long[1];
        CudaDriver.check(CudaDriver.cuDevicePrimaryCtxRetain(context, device[0]), "cuDevicePrimaryCtxRetain");
        CudaDriver.check(CudaDriver.cuDevicePrimaryCtxRelease_v2(device[0]), "cuDevicePrimaryCtxRelease");
        return context[0];
    }
}
