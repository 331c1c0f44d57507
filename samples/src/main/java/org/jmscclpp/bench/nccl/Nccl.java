package org.jmscclpp.bench.nccl;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.util.List;
import java.util.Optional;
import org.jmscclpp.nativebridge.LibraryLookup;
import org.jspecify.annotations.Nullable;

/**
 * NCCL ({@code libnccl.so.2}) through JNA direct mapping, like the library's CUDA driver binding:
 * the calls {@link NcclCommunicator} makes, nothing more. Communicators ({@code ncclComm_t}),
 * streams and device pointers travel as {@code long}; out-parameters are one-element arrays; every
 * function returns an {@code ncclResult_t}.
 *
 * <p>Where the library comes from: the file {@value #LIBRARY_ENV} names when that is set (alone: a
 * failure there is reported, not papered over by a search); otherwise {@code libnccl.so.2} through
 * the dynamic loader's search, then {@link #KNOWN_PATHS}. When none loads,
 * {@link #unavailableReason()} lists each attempt and no native method may be called.
 *
 * <p>Layouts and values are those of {@code nccl.h} 2.30.7 ({@link #HEADER_VERSION}); NCCL reads a
 * config of a newer header than its own up to its own size, so the same bytes serve 2.28.
 */
final class Nccl {

    /** Environment variable naming the NCCL library file to load instead of searching. */
    static final String LIBRARY_ENV = "JMSCCLPP_NCCL_LIBRARY";
    /** Where distributions put NCCL, tried after the loader's own search for {@code libnccl.so.2}. */
    static final List<String> KNOWN_PATHS = List.of(
            "/lib/x86_64-linux-gnu/libnccl.so.2",
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
            "/usr/local/nccl/lib/libnccl.so.2",
            "/usr/local/cuda/lib64/libnccl.so.2");

    /** How NCCL is found: {@link #LIBRARY_ENV}, else the loader's search for libnccl.so.2, else {@link #KNOWN_PATHS}. */
    static final LibraryLookup LOOKUP = new LibraryLookup(LIBRARY_ENV, "libnccl.so.2", "libnccl.so.2",
            "NCCL (libnccl.so.2)", "libnccl.so.2");

    // ncclResult_t
    static final int SUCCESS = 0;
    static final int UNHANDLED_CUDA_ERROR = 1;
    static final int SYSTEM_ERROR = 2;
    static final int INTERNAL_ERROR = 3;
    static final int INVALID_ARGUMENT = 4;
    static final int INVALID_USAGE = 5;
    static final int REMOTE_ERROR = 6;
    static final int IN_PROGRESS = 7;

    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    static final int UNIQUE_ID_BYTES = 128;

    // ncclConfig_t (struct ncclConfig_v23000 of nccl.h 2.30.7) on x86-64
    /** {@code NCCL_VERSION(2, 30, 7)}: the header the config layout below is taken from. */
    static final int HEADER_VERSION = version(2, 30, 7);
    static final int CONFIG_MAGIC = 0xcafebeef;
    /** {@code NCCL_CONFIG_UNDEF_INT}: INT_MIN, "let NCCL choose". */
    static final int CONFIG_UNDEF_INT = Integer.MIN_VALUE;
    static final int CONFIG_BYTES = 96;
    static final int CONFIG_SIZE = 0;
    static final int CONFIG_MAGIC_OFFSET = 8;
    static final int CONFIG_VERSION = 12;
    static final int CONFIG_BLOCKING = 16;
    /** Every field of {@code ncclConfig_t} and its offset, in order; pointers are 8 bytes, the rest 4. */
    static final List<ConfigField> CONFIG_FIELDS = List.of(
            new ConfigField("size", CONFIG_SIZE, 8),
            new ConfigField("magic", CONFIG_MAGIC_OFFSET, 4),
            new ConfigField("version", CONFIG_VERSION, 4),
            new ConfigField("blocking", CONFIG_BLOCKING, 4),
            new ConfigField("cgaClusterSize", 20, 4),
            new ConfigField("minCTAs", 24, 4),
            new ConfigField("maxCTAs", 28, 4),
            new ConfigField("netName", 32, 8),
            new ConfigField("splitShare", 40, 4),
            new ConfigField("trafficClass", 44, 4),
            new ConfigField("commName", 48, 8),
            new ConfigField("collnetEnable", 56, 4),
            new ConfigField("CTAPolicy", 60, 4),
            new ConfigField("shrinkShare", 64, 4),
            new ConfigField("nvlsCTAs", 68, 4),
            new ConfigField("nChannelsPerNetPeer", 72, 4),
            new ConfigField("nvlinkCentricSched", 76, 4),
            new ConfigField("graphUsageMode", 80, 4),
            new ConfigField("numRmaCtx", 84, 4),
            new ConfigField("maxP2pPeers", 88, 4),
            new ConfigField("graphStreamOrdering", 92, 4));

    /** One field of {@code ncclConfig_t}: name, byte offset, size. */
    record ConfigField(String name, int offset, int size) {
    }

    private static final @Nullable String UNAVAILABLE;
    private static final String LOADED_FROM;

    static {
        LibraryLookup.Resolution resolution = LOOKUP.resolve(System.getenv(LIBRARY_ENV), KNOWN_PATHS,
                NativeLibrary::getInstance);
        String reason = resolution.failure();
        NativeLibrary library = resolution.library();
        if (library != null) {
            try {
                Native.register(Nccl.class, library);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                reason = "NCCL loaded from " + resolution.source() + " lacks a function jmscclpp needs: "
                        + e.getMessage();
            }
        }
        UNAVAILABLE = reason;
        LOADED_FROM = resolution.source();
    }

    private Nccl() {
    }

    /** Empty when the library is registered; otherwise why not, naming every attempt. */
    static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /** What the library was loaded as (a path or a soname); empty when it was not. */
    static String loadedFrom() {
        return LOADED_FROM;
    }

    /** {@code NCCL_VERSION(major, minor, patch)}: the code {@code ncclGetVersion} gives. */
    static int version(int major, int minor, int patch) {
        return major <= 2 && minor <= 8 ? major * 1000 + minor * 100 + patch : major * 10000 + minor * 100 + patch;
    }

    /** {@code 2.28.9} for the code 22809 (and {@code 2.8.4} for 2804, the scheme before 2.9). */
    static String versionString(int code) {
        if (code >= 10000) {
            return code / 10000 + "." + code % 10000 / 100 + "." + code % 100;
        }
        return code / 1000 + "." + code % 1000 / 100 + "." + code % 100;
    }

    /**
     * {@code ncclConfig_t} as {@code NCCL_CONFIG_INITIALIZER} fills it (size, magic, the header's
     * version; every other field undefined: {@code INT_MIN} or {@code NULL}), then {@code blocking}.
     */
    static Memory config(boolean blocking) {
        Memory config = new Memory(CONFIG_BYTES);
        config.clear();
        for (ConfigField field : CONFIG_FIELDS) {
            if (field.size() == 4) {
                config.setInt(field.offset(), CONFIG_UNDEF_INT);
            }
        }
        config.setLong(CONFIG_SIZE, CONFIG_BYTES);
        config.setInt(CONFIG_MAGIC_OFFSET, CONFIG_MAGIC);
        config.setInt(CONFIG_VERSION, HEADER_VERSION);
        config.setInt(CONFIG_BLOCKING, blocking ? 1 : 0);
        return config;
    }


    // ---------------------------------------------------------------------------------------------
    // library, errors, communicators

    static native int ncclGetVersion(int[] version);

    /** Fills the 128 bytes of an {@code ncclUniqueId}. */
    static native int ncclGetUniqueId(byte[] uniqueId);

    static native int ncclCommInitRankConfig(long[] comm, int nRanks, UniqueId commId, int rank, Pointer config);

    static native int ncclCommGetAsyncError(long comm, int[] asyncError);

    static native int ncclCommFinalize(long comm);

    static native int ncclCommDestroy(long comm);

    static native int ncclCommAbort(long comm);

    static native String ncclGetErrorString(int result);

    /** The last error NCCL recorded for {@code comm} (any communicator when 0), often empty. */
    static native String ncclGetLastError(long comm);

    // ---------------------------------------------------------------------------------------------
    // operations

    static native int ncclGroupStart();

    static native int ncclGroupEnd();

    static native int ncclAllReduce(long sendBuffer, long recvBuffer, long count, int dataType, int op, long comm,
                                    long stream);

    static native int ncclAllGather(long sendBuffer, long recvBuffer, long sendCount, int dataType, long comm,
                                    long stream);

    static native int ncclReduceScatter(long sendBuffer, long recvBuffer, long recvCount, int dataType, int op,
                                        long comm, long stream);

    static native int ncclBroadcast(long sendBuffer, long recvBuffer, long count, int dataType, int root, long comm,
                                    long stream);

    static native int ncclReduce(long sendBuffer, long recvBuffer, long count, int dataType, int op, int root,
                                 long comm, long stream);

    static native int ncclSend(long sendBuffer, long count, int dataType, int peer, long comm, long stream);

    static native int ncclRecv(long recvBuffer, long count, int dataType, int peer, long comm, long stream);

    /** {@code ncclUniqueId}, 128 opaque bytes passed by value to {@code ncclCommInitRankConfig}. */
    public static final class UniqueId extends Structure implements Structure.ByValue {
        public byte[] internal = new byte[UNIQUE_ID_BYTES];

        public UniqueId() {
        }

        UniqueId(byte[] bytes) {
            System.arraycopy(bytes, 0, internal, 0, UNIQUE_ID_BYTES);
        }

        @Override
        protected List<String> getFieldOrder() {
            return List.of("internal");
        }
    }
}
