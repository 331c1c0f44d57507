package org.jmscclpp.pmix;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.LauncherStore;
import org.jmscclpp.nativebridge.LibraryLookup;
import org.jmscclpp.nativebridge.Pmix;
import org.jspecify.annotations.Nullable;

/**
 * The PMIx server of the launcher ({@code mpirun}, {@code srun --mpi=pmix}) as a {@link LauncherStore}: rank 0
 * {@code PMIx_Put}s the value (a byte object, global scope) and commits; every rank joins a {@code PMIx_Fence}
 * that collects the data, bounded by {@code PMIX_TIMEOUT}; the others {@code PMIx_Get} rank 0's value. libpmix is
 * found as {@code JMSCCLPP_PMIX_LIBRARY} names it, else by JNA's search for {@code libpmix.so.2}, else at Debian's
 * paths ({@code libpmix2}, which Open MPI's packages depend on).
 */
public final class PmixStoreProvider implements LauncherStore.Provider {

    /** Names the libpmix file to load instead of searching. */
    public static final String LIBRARY_ENV = "JMSCCLPP_PMIX_LIBRARY";

    private static final LibraryLookup LOOKUP = new LibraryLookup(LIBRARY_ENV, "libpmix.so.2",
            "JNA name libpmix.so.2", "PMIx (libpmix)", "libpmix.so.2");
    private static final List<String> KNOWN_PATHS = List.of(
            "/usr/lib/x86_64-linux-gnu/libpmix.so.2",
            "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2",
            "/usr/lib64/libpmix.so.2");
    /** Every function the store calls: a library that lacks one is not a usable libpmix (PMIx 4 or later). */
    private static final List<String> FUNCTIONS = List.of("PMIx_Init", "PMIx_Finalize", "PMIx_Put", "PMIx_Commit",
            "PMIx_Fence", "PMIx_Get", "PMIx_Value_destruct", "PMIx_Error_string");
    private static final String PHASE = "PMIx rendezvous";
    /** One PMIx client per process: PMIx_Init is reference counted, but the library is loaded once. */
    private static final Object LOAD_LOCK = new Object();
    private static @Nullable Pmix pmix;

    /** For {@link java.util.ServiceLoader}. */
    public PmixStoreProvider() {
    }

    @Override
    public String name() {
        return "PMIx";
    }

    @Override
    public boolean detects(Map<String, String> env) {
        return present(env, "PMIX_RANK") && present(env, "PMIX_NAMESPACE");
    }

    @Override
    public Optional<LauncherStore> open(Map<String, String> env, int rank) {
        if (!detects(env)) {
            return Optional.empty();
        }
        Pmix lib = library(env.get(LIBRARY_ENV), rank);
        Memory proc = new Memory(Pmix.PROC_BYTES);
        proc.clear();
        int rc = lib.PMIx_Init(proc, Pointer.NULL, 0);
        if (rc != Pmix.SUCCESS) {
            throw failure(ErrorCode.SYSTEM_ERROR, rank, "PMIx_Init", lib, rc,
                    "the launcher's PMIx server (PMIX_NAMESPACE=" + env.get("PMIX_NAMESPACE") + ") cannot be joined");
        }
        String nspace = proc.getString(0);
        int pmixRank = proc.getInt(Pmix.NSPACE_BYTES);
        if (pmixRank != rank) {
            lib.PMIx_Finalize(Pointer.NULL, 0);
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "PMIx says this process is rank " + pmixRank
                    + " of namespace " + nspace + ", the launcher's variables say rank " + rank)
                    .rank(rank).phase(PHASE).build();
        }
        return Optional.of(new Store(lib, nspace, rank));
    }

    private static Pmix library(@Nullable String configured, int rank) {
        synchronized (LOAD_LOCK) {
            if (pmix == null) {
                LibraryLookup.Resolution r = LOOKUP.resolve(configured, KNOWN_PATHS, NativeLibrary::getInstance);
                NativeLibrary lib = r.library();
                if (lib == null) {
                    throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, r.failure()
                            + " (Debian: apt-get install libpmix2), or set MSCCLPP_COMM_ID=ip:port")
                            .rank(rank).phase(PHASE).build();
                }
                // JNA binds a function at its first call: a library without it would throw UnsatisfiedLinkError
                // there, on the rendezvous thread, instead of this error
                for (String function : FUNCTIONS) {
                    try {
                        lib.getFunction(function);
                    } catch (UnsatisfiedLinkError e) {
                        throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "PMIx (libpmix) loaded from "
                                + r.source() + " lacks " + function + " (" + LibraryLookup.oneLine(e) + "): it is not "
                                + "a PMIx 4 client library. Set " + LIBRARY_ENV + " to the path of libpmix.so.2 "
                                + "(Debian: apt-get install libpmix2), or set MSCCLPP_COMM_ID=ip:port")
                                .rank(rank).phase(PHASE).build();
                    }
                }
                pmix = Native.load(r.source(), Pmix.class, Map.of(Library.OPTION_STRING_ENCODING, "UTF-8"));
            }
            return pmix;
        }
    }

    private static boolean present(Map<String, String> env, String name) {
        String v = env.get(name);
        return v != null && !v.isBlank();
    }

    private static JmscclppException failure(ErrorCode code, int rank, String call, Pmix lib, int rc, String what) {
        return JmscclppException.builder(code, what + ": " + call + " returned " + rc + " ("
                + lib.PMIx_Error_string(rc) + ")").rank(rank).phase(PHASE + " (" + call + ")").build();
    }

    /** One rank's connection to the PMIx server. */
    private static final class Store implements LauncherStore {

        private final Pmix lib;
        private final String nspace;
        private final int rank;
        private final AtomicBoolean closed = new AtomicBoolean();

        Store(Pmix lib, String nspace, int rank) {
            this.lib = lib;
            this.nspace = nspace;
            this.rank = rank;
        }

        @Override
        public String name() {
            return "PMIx";
        }

        @Override
        public byte[] shareFromRankZero(String key, byte @Nullable [] value, Duration timeout) {
            if ((rank == 0) != (value != null)) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank 0, and only rank 0, passes the value")
                        .rank(rank).phase(PHASE).build();
            }
            int seconds = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (timeout.toMillis() + 999) / 1000));
            if (value != null) {
                Memory data = new Memory(Math.max(1, value.length));
                data.write(0, value, 0, value.length);
                Memory v = new Memory(Pmix.VALUE_BYTES);
                v.clear();
                v.setShort(0, Pmix.TYPE_BYTE_OBJECT);
                v.setPointer(Pmix.VALUE_DATA, data);
                v.setLong(Pmix.VALUE_DATA + 8, value.length);
                check("PMIx_Put", lib.PMIx_Put(Pmix.GLOBAL, key, v), key);
                check("PMIx_Commit", lib.PMIx_Commit(), key);
            }
            Memory infos = new Memory(2L * Pmix.INFO_BYTES);
            infos.clear();
            infos.setString(0, Pmix.COLLECT_DATA);
            infos.setShort(Pmix.INFO_VALUE, Pmix.TYPE_BOOL);
            infos.setByte(Pmix.INFO_VALUE + Pmix.VALUE_DATA, (byte) 1);
            infos.setString(Pmix.INFO_BYTES, Pmix.TIMEOUT);
            infos.setShort(Pmix.INFO_BYTES + Pmix.INFO_VALUE, Pmix.TYPE_INT);
            infos.setInt(Pmix.INFO_BYTES + Pmix.INFO_VALUE + Pmix.VALUE_DATA, seconds);
            check("PMIx_Fence", lib.PMIx_Fence(Pointer.NULL, 0, infos, 2), key);
            if (value != null) {
                return value.clone();
            }
            Memory root = new Memory(Pmix.PROC_BYTES);
            root.clear();
            root.setString(0, nspace);
            root.setInt(Pmix.NSPACE_BYTES, 0);
            PointerByReference out = new PointerByReference();
            // the second info alone: PMIX_TIMEOUT
            check("PMIx_Get", lib.PMIx_Get(root, key, infos.share(Pmix.INFO_BYTES), 1, out), key);
            Pointer v = out.getValue();
            if (v == null) {
                throw JmscclppException.builder(ErrorCode.REMOTE_ERROR, "PMIx_Get of " + key
                        + " from rank 0 succeeded without a value").rank(rank).peer(0).phase(PHASE).build();
            }
            try {
                short type = v.getShort(0);
                if (type != Pmix.TYPE_BYTE_OBJECT) {
                    throw JmscclppException.builder(ErrorCode.REMOTE_ERROR, "rank 0's " + key + " in PMIx has type "
                            + type + ", not a byte object (" + Pmix.TYPE_BYTE_OBJECT + ")")
                            .rank(rank).peer(0).phase(PHASE).build();
                }
                long size = v.getLong(Pmix.VALUE_DATA + 8);
                Pointer bytes = v.getPointer(Pmix.VALUE_DATA);
                if (size < 0 || size > 1 << 20 || (size > 0 && bytes == null)) {
                    throw JmscclppException.builder(ErrorCode.REMOTE_ERROR, "rank 0's " + key + " in PMIx holds "
                            + size + " bytes").rank(rank).peer(0).phase(PHASE).build();
                }
                return size == 0 ? new byte[0] : bytes.getByteArray(0, (int) size);
            } finally {
                lib.PMIx_Value_destruct(v);
                Native.free(Pointer.nativeValue(v));
            }
        }

        private void check(String call, int rc, String key) {
            if (rc == Pmix.SUCCESS) {
                return;
            }
            ErrorCode code = rc == Pmix.ERR_TIMEOUT ? ErrorCode.TIMEOUT : ErrorCode.REMOTE_ERROR;
            throw failure(code, rank, call, lib, rc, "sharing " + key + " through PMIx namespace " + nspace
                    + (rc == Pmix.ERR_TIMEOUT ? " timed out waiting for the job's other ranks" : " failed"));
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                lib.PMIx_Finalize(Pointer.NULL, 0);
            }
        }
    }
}
