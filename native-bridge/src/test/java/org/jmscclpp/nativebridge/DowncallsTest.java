package org.jmscclpp.nativebridge;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

/**
 * The foreign-function downcalls the CUDA hot calls are built with, checked against JNA on libc (libcuda is not
 * on every build machine; the GPU test runs the CUDA calls themselves): the same file, the same symbols, the same
 * results, arguments passed as the CUDA bindings pass them (handles and pointers as {@code long}).
 */
class DowncallsTest {

    private static final NativeLibrary LIBC = NativeLibrary.getInstance("c");
    private static final Downcalls DOWNCALLS = Downcalls.of(LIBC);

    @Test
    void symbolsResolveToTheAddressesJnaBinds() {
        for (String symbol : new String[] {"getpid", "strlen", "memset"}) {
            long jna = Pointer.nativeValue(LIBC.getFunction(symbol));
            assertEquals(jna, DOWNCALLS.address(symbol).address(), symbol + " in " + DOWNCALLS.library());
        }
        // a library JNA found as a file (libcuda is one where jna.library.path names its folder, as on the GPU hosts)
        NativeLibrary libm = NativeLibrary.getInstance("m");
        Downcalls m = Downcalls.of(libm);
        assertEquals(libm.getFile().getPath(), m.library());
        for (String symbol : new String[] {"cos", "ldexp"}) {
            assertEquals(Pointer.nativeValue(libm.getFunction(symbol)), m.address(symbol).address(), symbol);
        }
    }

    @Test
    void doublesAndIntsPassThroughAsTheyDoThroughJna() throws Throwable {
        NativeLibrary libm = NativeLibrary.getInstance("m");
        MethodHandle ldexp = Downcalls.of(libm).bind("ldexp", FunctionDescriptor.of(JAVA_DOUBLE, JAVA_DOUBLE,
                JAVA_INT), true);
        double ffm = (double) ldexp.invokeExact(1.5, 10);
        assertEquals(1536.0, ffm);
        assertEquals(libm.getFunction("ldexp").invokeDouble(new Object[] {1.5, 10}), ffm);
    }

    @Test
    void aCriticalCallWithoutArgumentsReturnsWhatJnaReturns() throws Throwable {
        MethodHandle getpid = DOWNCALLS.bind("getpid", FunctionDescriptor.of(JAVA_INT), true);
        int ffm = (int) getpid.invokeExact();
        assertEquals(ProcessHandle.current().pid(), ffm);
        assertEquals(LIBC.getFunction("getpid").invokeInt(new Object[0]), ffm);
    }

    @Test
    void aPointerPassedAsLongReachesTheFunction() throws Throwable {
        for (boolean critical : new boolean[] {true, false}) {
            MethodHandle strlen = DOWNCALLS.bind("strlen", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG), critical);
            try (Arena arena = Arena.ofConfined(); Memory jnaString = new Memory(64)) {
                MemorySegment text = arena.allocateFrom("native calls from Java");
                jnaString.setString(0, "native calls from Java");
                long ffm = (long) strlen.invokeExact(text.address());
                assertEquals(22, ffm, "critical " + critical);
                assertEquals(LIBC.getFunction("strlen").invokeLong(new Object[] {jnaString}), ffm);
            }
        }
    }

    /** memset(void*, int, size_t) takes what cuStreamWriteValue64 takes: 64-bit values, then a 32-bit one. */
    @Test
    void mixedLongAndIntArgumentsKeepTheirOrderAndWidth() throws Throwable {
        MethodHandle memset = DOWNCALLS.bind("memset", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_INT,
                JAVA_LONG), false);
        Function jnaMemset = LIBC.getFunction("memset");
        try (Arena arena = Arena.ofConfined(); Memory jnaBlock = new Memory(16)) {
            MemorySegment block = arena.allocate(16);
            long returned = (long) memset.invokeExact(block.address() + 3, 0x1A5, 9L);
            assertEquals(block.address() + 3, returned, "memset returns its destination");
            jnaBlock.clear();
            jnaMemset.invoke(Pointer.class, new Object[] {jnaBlock.share(3), 0x1A5, 9L});
            for (int i = 0; i < 16; i++) {
                byte expected = i >= 3 && i < 12 ? (byte) 0xA5 : 0;
                assertEquals(expected, block.get(JAVA_BYTE, i), "FFM byte " + i);
                assertEquals(expected, jnaBlock.getByte(i), "JNA byte " + i);
            }
        }
    }

    @Test
    void aMissingSymbolIsNamedWithTheLibrary() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> DOWNCALLS.bind("cuNoSuchCall_v9", FunctionDescriptor.of(JAVA_INT), true));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
        assertTrue(e.getMessage().contains("symbol cuNoSuchCall_v9 is not exported by " + DOWNCALLS.library()),
                e.getMessage());
    }

    @Test
    void theBindingIsFfmUnlessThePropertyOrTheEnvironmentSaysJna() {
        assertSame(CudaHotCalls.Binding.FFM, CudaHotCalls.requested(null, null));
        assertSame(CudaHotCalls.Binding.FFM, CudaHotCalls.requested("", " "));
        assertSame(CudaHotCalls.Binding.JNA, CudaHotCalls.requested("false", null));
        assertSame(CudaHotCalls.Binding.JNA, CudaHotCalls.requested(null, "JNA"));
        assertSame(CudaHotCalls.Binding.FFM, CudaHotCalls.requested("true", "false"), "the property wins");
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaHotCalls.requested(null, "maybe"));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("JMSCCLPP_CUDA_FFM=maybe is not a binding"), e.getMessage());
    }

    @Test
    void theFfmBindingIsChosenWhereTheDriverLoadsAndOtherwiseSaysWhyNot() {
        assertSame(CudaHotCalls.Binding.JNA, CudaHotCalls.jna().binding());
        if (CudaDriver.unavailableReason().isPresent()) {
            JmscclppException e = assertThrows(JmscclppException.class, CudaHotCalls::ffm);
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertTrue(e.getMessage().contains(CudaDriver.unavailableReason().get()), e.getMessage());
            assertSame(CudaHotCalls.Binding.JNA, CudaDriver.hotCalls().binding(), "nothing to link without a driver");
        } else {
            assertSame(CudaHotCalls.Binding.FFM, CudaHotCalls.ffm().binding());
            CudaHotCalls.Binding expected = CudaHotCalls.requested(System.getProperty(CudaHotCalls.PROPERTY),
                    System.getenv(CudaHotCalls.ENV));
            assertSame(expected, CudaDriver.hotCalls().binding());
        }
    }
}
