package org.jmscclpp.nativebridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NvrtcTest {

    /** A loader that fails like JNA does: a message over several lines. */
    private static final Function<String, NativeLibrary> NOTHING_LOADS = name -> {
        throw new UnsatisfiedLinkError("Unable to load library '" + name + "':\n" + name
                + ": cannot open shared object file: No such file or directory\n");
    };

    @Test
    void aBogusConfiguredPathIsReportedWithoutSearchingFurther() {
        LibraryLookup.Resolution r = Nvrtc.LOOKUP.resolve("/nonexistent/libnvrtc.so.13", Nvrtc.KNOWN_PATHS, NativeLibrary::getInstance);
        assertNull(r.library());
        String reason = r.failure();
        assertTrue(reason != null && reason.startsWith("NVRTC (libnvrtc) cannot be loaded; tried: "
                + "JMSCCLPP_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 ("), reason);
        assertTrue(reason.endsWith(" (/nonexistent/libnvrtc.so.13: cannot open shared object file: No such file or "
                + "directory). Set JMSCCLPP_NVRTC_LIBRARY to the path of libnvrtc.so.13"), reason);
        assertFalse(reason.contains("JNA name nvrtc"), "an explicit path is the only attempt: " + reason);
        assertFalse(reason.contains("\n"), "one line: " + reason);
        System.out.println("reason for a bogus JMSCCLPP_NVRTC_LIBRARY: " + reason);
    }

    @Test
    void withoutConfigurationEveryAttemptIsListed(@TempDir Path dir) throws IOException {
        Path absent = dir.resolve("absent/libnvrtc.so.13");
        Path present = Files.writeString(dir.resolve("libnvrtc.so"), "not a library");
        List<String> loaded = new ArrayList<>();
        LibraryLookup.Resolution r = Nvrtc.LOOKUP.resolve("  ", List.of(absent.toString(), present.toString()), name -> {
            loaded.add(name);
            return NOTHING_LOADS.apply(name);
        });
        assertNull(r.library());
        assertEquals(List.of("nvrtc", present.toString()), loaded, "absent files are not handed to the loader");
        assertEquals("NVRTC (libnvrtc) cannot be loaded; tried: "
                + "JNA name nvrtc (nvrtc: cannot open shared object file: No such file or directory); "
                + absent + " (absent); "
                + present + " (" + present + ": cannot open shared object file: No such file or directory). "
                + "Set JMSCCLPP_NVRTC_LIBRARY to the path of libnvrtc.so.13", r.failure());
    }

    @Test
    void jnaLoadErrorsAreCutToTheLoadersWords() {
        UnsatisfiedLinkError jna = new UnsatisfiedLinkError("""
                Unable to load library '/x/libnvrtc.so.13':
                /x/libnvrtc.so.13: cannot open shared object file: No such file or directory
                /x/libnvrtc.so.13: cannot open shared object file: No such file or directory
                Native library (x/libnvrtc.so.13) not found in resource path (/a.jar:/b.jar)""");
        assertEquals("/x/libnvrtc.so.13: cannot open shared object file: No such file or directory", LibraryLookup.oneLine(jna));
        assertEquals("Unable to load library 'y'", LibraryLookup.oneLine(new UnsatisfiedLinkError("Unable to load library 'y'")));
        assertEquals("UnsatisfiedLinkError", LibraryLookup.oneLine(new UnsatisfiedLinkError()));
    }

    @Test
    void theFirstKnownPathThatLoadsWins(@TempDir Path dir) throws IOException {
        Path first = Files.writeString(dir.resolve("first.so"), "");
        Path second = Files.writeString(dir.resolve("second.so"), "");
        NativeLibrary libc = NativeLibrary.getInstance("c");
        LibraryLookup.Resolution r = Nvrtc.LOOKUP.resolve(null, List.of(first.toString(), second.toString()),
                name -> name.equals(first.toString()) ? libc : NOTHING_LOADS.apply(name));
        assertSame(libc, r.library());
        assertEquals(first.toString(), r.source());
        assertNull(r.failure());
    }

    @Test
    void theConfiguredPathIsLoadedAsGiven() {
        NativeLibrary libc = NativeLibrary.getInstance("c");
        LibraryLookup.Resolution r = Nvrtc.LOOKUP.resolve("/opt/somewhere/libnvrtc.so.13", List.of(),
                name -> name.equals("/opt/somewhere/libnvrtc.so.13") ? libc : NOTHING_LOADS.apply(name));
        assertSame(libc, r.library());
        assertEquals("/opt/somewhere/libnvrtc.so.13", r.source());
    }

    @Test
    void cStringsIsAPointerArrayFollowedByTheStrings() {
        Memory block = Nvrtc.cStrings(List.of("-std=c++17", "", "ünï"));
        assertTrue(block != null);
        long base = Pointer.nativeValue(block);
        Pointer first = block.getPointer(0);
        assertEquals(base + 3L * Native.POINTER_SIZE, Pointer.nativeValue(first), "strings follow the array");
        assertEquals("-std=c++17", first.getString(0, "UTF-8"));
        assertEquals("", block.getPointer(Native.POINTER_SIZE).getString(0, "UTF-8"));
        assertEquals("ünï", block.getPointer(2L * Native.POINTER_SIZE).getString(0, "UTF-8"));
        assertNull(Nvrtc.cStrings(List.of()), "no strings, no block");
        byte[] c = Nvrtc.cString("ab");
        assertEquals(3, c.length);
        assertEquals(0, c[2]);
        assertEquals("ünï", new String(Nvrtc.cString("ünï"), 0, "ünï".getBytes(StandardCharsets.UTF_8).length,
                StandardCharsets.UTF_8));
    }

    @Test
    void theStateIsConsistent() {
        Nvrtc.unavailableReason().ifPresentOrElse(reason -> {
            System.out.println("NVRTC unavailable: " + reason);
            assertTrue(reason.startsWith("NVRTC "), reason);
            JmscclppException e = assertThrows(JmscclppException.class, Nvrtc::version);
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertTrue(e.getMessage().contains(reason), e.getMessage());
        }, () -> {
            System.out.println("NVRTC " + Nvrtc.version() + " from " + Nvrtc.loadedFrom());
            assertTrue(Nvrtc.version().matches("\\d+\\.\\d+"), Nvrtc.version());
            assertFalse(Nvrtc.loadedFrom().isEmpty());
        });
    }

    @Test
    void resultsAreDescribedByNvrtc() {
        Nvrtc.unavailableReason().ifPresent(Assumptions::abort);
        assertEquals("NVRTC_ERROR_COMPILATION (6)", Nvrtc.describe(Nvrtc.NVRTC_ERROR_COMPILATION));
        assertEquals("NVRTC_SUCCESS (0)", Nvrtc.describe(Nvrtc.NVRTC_SUCCESS));
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> Nvrtc.check(Nvrtc.NVRTC_ERROR_INVALID_OPTION, "nvrtcCompileProgram(x.cu)"));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
        assertEquals("nvrtcCompileProgram(x.cu) failed: NVRTC_ERROR_INVALID_OPTION (5)", e.detail());
    }
}
