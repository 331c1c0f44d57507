package org.jmscclpp.bench.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Memory;
import java.nio.file.Path;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.LibraryLookup;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NCCL's binding where no GPU is needed: finding the library (and saying why it was not found),
 * the version scheme, the config struct as {@code NCCL_CONFIG_INITIALIZER} fills it, and, where
 * {@code libnccl.so.2} loads ({@code JMSCCLPP_NCCL_LIBRARY}), {@code ncclGetVersion} and
 * {@code ncclGetUniqueId}; where it does not (CI), every entry point fails with the reason instead
 * of crashing.
 */
class NcclLibraryTest {

    @Test
    void aConfiguredLibraryThatDoesNotLoadIsReportedWithoutSearching(@TempDir Path dir) {
        String missing = dir.resolve("libnccl.so.2").toString();
        LibraryLookup.Resolution r = Nccl.LOOKUP.resolve(missing, List.of("/lib/x86_64-linux-gnu/libnccl.so.2"),
                com.sun.jna.NativeLibrary::getInstance);
        assertNull(r.library());
        String failure = r.failure();
        assertTrue(failure != null && failure.contains(Nccl.LIBRARY_ENV + "=" + missing), failure);
        assertFalse(failure.contains("/lib/x86_64-linux-gnu"), "no search after a configured path: " + failure);
        assertTrue(failure.contains("Set " + Nccl.LIBRARY_ENV), failure);
    }

    @Test
    void everyAttemptOfTheSearchIsNamedWithItsError(@TempDir Path dir) throws Exception {
        Path present = java.nio.file.Files.writeString(dir.resolve("libnccl.so.2"), "not an ELF file");
        String absent = dir.resolve("nowhere/libnccl.so.2").toString();
        LibraryLookup.Resolution r = Nccl.LOOKUP.resolve(null, List.of(absent, present.toString()), name -> {
            throw new UnsatisfiedLinkError("cannot open " + name);
        });
        assertNull(r.library());
        String failure = r.failure();
        assertTrue(failure != null && failure.startsWith("NCCL (libnccl.so.2) cannot be loaded"), failure);
        assertTrue(failure.contains("libnccl.so.2 (cannot open libnccl.so.2)"), failure);
        assertTrue(failure.contains(absent + " (absent)"), failure);
        assertTrue(failure.contains(present + " (cannot open " + present + ")"), failure);
    }

    @Test
    void versionCodesFollowNcclVersion() {
        assertEquals(22809, Nccl.version(2, 28, 9));
        assertEquals(23007, Nccl.version(2, 30, 7));
        assertEquals(2804, Nccl.version(2, 8, 4));
        assertEquals("2.28.9", Nccl.versionString(22809));
        assertEquals("2.30.7", Nccl.versionString(Nccl.HEADER_VERSION));
        assertEquals("2.8.4", Nccl.versionString(2804));
    }

    @Test
    void theConfigIsWhatTheInitializerMakesWithBlockingOff() {
        Memory config = Nccl.config(false);
        assertEquals(Nccl.CONFIG_BYTES, config.size());
        assertEquals(Nccl.CONFIG_BYTES, config.getLong(0), "size");
        assertEquals(0xcafebeef, config.getInt(8), "magic");
        assertEquals(Nccl.HEADER_VERSION, config.getInt(12), "version");
        assertEquals(0, config.getInt(16), "blocking");
        for (Nccl.ConfigField f : Nccl.CONFIG_FIELDS.subList(4, Nccl.CONFIG_FIELDS.size())) {
            long value = f.size() == 8 ? config.getLong(f.offset()) : config.getInt(f.offset());
            assertEquals(f.size() == 8 ? 0 : Integer.MIN_VALUE, value, f.name());
        }
        assertEquals(1, Nccl.config(true).getInt(16), "blocking on");
    }

    @Test
    void configFieldsTileTheStruct() {
        int end = 0;
        for (Nccl.ConfigField f : Nccl.CONFIG_FIELDS) {
            assertEquals(0, f.offset() % f.size(), f.name() + " is aligned");
            assertTrue(f.offset() >= end, f.name() + " follows the previous field");
            end = f.offset() + f.size();
        }
        assertEquals(Nccl.CONFIG_BYTES, end);
    }

    @Test
    void elementSizesFollowNcclDataType() {
        assertEquals(4, NcclCommunicator.elementBytes(7, 0), "float32");
        assertEquals(2, NcclCommunicator.elementBytes(6, 0), "float16");
        assertEquals(2, NcclCommunicator.elementBytes(9, 0), "bfloat16");
        assertEquals(4, NcclCommunicator.elementBytes(2, 0), "int32");
        assertEquals(8, NcclCommunicator.elementBytes(8, 0), "float64");
        assertEquals(1, NcclCommunicator.elementBytes(0, 0), "int8");
        JmscclppException e = assertThrows(JmscclppException.class, () -> NcclCommunicator.elementBytes(12, 3));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals(3, e.rank());
    }

    @Test
    void withoutTheLibraryEveryEntryPointSaysWhy() {
        Assumptions.assumeTrue(Nccl.unavailableReason().isPresent(), "libnccl.so.2 loads here");
        String reason = NcclCommunicator.unavailableReason().orElseThrow();
        assertTrue(reason.contains("libnccl.so.2") && reason.contains("tried"), reason);
        for (Runnable call : List.<Runnable>of(NcclCommunicator::uniqueId, NcclCommunicator::libraryVersion,
                () -> NcclCommunicator.requireAvailable("init"))) {
            JmscclppException e = assertThrows(JmscclppException.class, call::run);
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertEquals(reason, e.detail());
        }
    }

    @Test
    void withTheLibraryVersionAndUniqueIdWorkWithoutAGpu() {
        Nccl.unavailableReason().ifPresent(reason -> Assumptions.abort("NCCL is not loadable here: " + reason));
        String version = NcclCommunicator.libraryVersion();
        assertTrue(version.matches("2\\.\\d+\\.\\d+"), version);
        byte[] first = NcclCommunicator.uniqueId();
        byte[] second = NcclCommunicator.uniqueId();
        assertEquals(Nccl.UNIQUE_ID_BYTES, first.length);
        assertFalse(java.util.Arrays.equals(new byte[Nccl.UNIQUE_ID_BYTES], first), "the id is filled in");
        assertFalse(java.util.Arrays.equals(first, second), "each id is new");
        assertArrayEquals(first, new Nccl.UniqueId(first).internal, "the by-value struct carries the bytes");
        System.out.println("NCCL " + version + " from " + Nccl.loadedFrom());
    }
}
