package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DeviceAbortFlag} on the host backend, whose host-visible memory is shared memory: the
 * word that the device waits read follows the communicator's abort signal, and the codes device
 * waits write into it read back as the errors they stand for. (The kernels that read it run in
 * {@code CudaAbortGpuTest}.)
 */
class DeviceAbortFlagTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    @TempDir
    Path shm;

    private HostBackend backend;

    @BeforeEach
    void open() {
        backend = HostBackend.open(shm);
    }

    @AfterEach
    void close() {
        backend.close();
    }

    private static JmscclppException aborted(int rank) {
        return JmscclppException.builder(ErrorCode.ABORTED, "rank " + rank + " aborted the job: test").rank(rank)
                .peer(rank).phase("abort").build();
    }

    @Test
    void theWordIsClearUntilTheSignalIsRaisedThenSaysRaised() {
        AbortSignal signal = AbortSignal.create();
        try (DeviceAbortFlag flag = DeviceAbortFlag.create(backend, signal, 0)) {
            assertNotEquals(0, flag.address());
            assertEquals(DeviceAbortFlag.NONE, flag.status());
            assertFalse(flag.isSet());
            assertTrue(flag.failure("test").isEmpty());
            flag.throwIfSet("test");

            signal.raise(aborted(1));

            assertEquals(DeviceAbortFlag.RAISED, flag.status());
            JmscclppException e = flag.failure("kernel").orElseThrow();
            assertEquals(ErrorCode.ABORTED, e.code());
            assertEquals(0, e.rank());
            assertEquals(1, e.peer(), "names the rank that failed first");
            assertEquals("kernel", e.phase());
            JmscclppException thrown = assertThrows(JmscclppException.class, () -> flag.throwIfSet("kernel"));
            assertEquals(ErrorCode.ABORTED, thrown.code());
        }
    }

    @Test
    void aFlagMadeForARaisedSignalIsSetAtOnce() {
        AbortSignal signal = AbortSignal.create();
        signal.raise(aborted(0));
        try (DeviceAbortFlag flag = DeviceAbortFlag.create(backend, signal, 0)) {
            assertEquals(DeviceAbortFlag.RAISED, flag.status());
        }
    }

    @Test
    void anAbortOnAnotherRankSetsThisRanksFlag(@TempDir Path groupShm) {
        try (CommunicatorGroup group = new CommunicatorGroup(2, groupShm);
             DeviceAbortFlag flag = DeviceAbortFlag.create(group.comm(0))) {
            assertFalse(flag.isSet());

            group.comm(1).abort("test");

            group.comm(0).abortSignal().whenRaised().block(WAIT);
            assertEquals(DeviceAbortFlag.RAISED, flag.status());
            JmscclppException e = flag.failure("kernel").orElseThrow();
            assertEquals(ErrorCode.ABORTED, e.code());
            assertEquals(0, e.rank());
            assertEquals(1, e.peer());
        }
    }

    @Test
    void codesThatDeviceWaitsWriteReadAsTheirErrors() {
        try (DeviceAbortFlag flag = DeviceAbortFlag.create(backend, AbortSignal.create(), 3)) {
            MemorySegment word = hostWord(flag);
            // what a wait past its deadline stores, with a kernel's own bit above the code
            word.set(ValueLayout.JAVA_LONG, 0, DeviceAbortFlag.TIMEOUT | 1L << 8);
            JmscclppException e = flag.failure("kernel").orElseThrow();
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals(3, e.rank());
            // the host's raise keeps the device's first code
            flag.raise();
            assertEquals(DeviceAbortFlag.TIMEOUT | 1L << 8, flag.status());

            word.set(ValueLayout.JAVA_LONG, 0, DeviceAbortFlag.PROXY_GONE);
            assertEquals(ErrorCode.SYSTEM_ERROR, flag.failure("kernel").orElseThrow().code());
        }
    }

    @Test
    void aKernelParameterCarriesTheWordsAddressAsOnePointer() {
        try (DeviceAbortFlag flag = DeviceAbortFlag.create(backend, AbortSignal.create(), 0)) {
            KernelArgs args = KernelArgs.builder().i32(1).abortFlag(flag).build();

            assertEquals(8, args.offset(1));
            assertEquals(DeviceAbortFlag.DEVICE_BYTES, args.size(1));
            long slot = Pointer.nativeValue(args.params().getPointer(Native.POINTER_SIZE));
            assertEquals(flag.address(), new Pointer(slot).getLong(0));
        }
    }

    @Test
    void aClosedFlagNoLongerFollowsTheSignalAndRefusesReads() {
        AbortSignal signal = AbortSignal.create();
        DeviceAbortFlag flag = DeviceAbortFlag.create(backend, signal, 0);
        flag.close();
        flag.close();

        signal.raise(aborted(0));

        JmscclppException e = assertThrows(JmscclppException.class, flag::status);
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
    }

    /** The flag's word as a kernel writes it: on the host backend the address is the mapping's. */
    private MemorySegment hostWord(DeviceAbortFlag flag) {
        return MemorySegment.ofAddress(flag.address()).reinterpret(8);
    }
}
