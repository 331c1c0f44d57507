package org.jmscclpp.cuda.kernel;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.nativebridge.Nvrtc;
import org.jspecify.annotations.Nullable;

/**
 * Compiles CUDA C++ source to a cubin with NVRTC, and remembers what it compiled: in memory for
 * the life of this object and on disk across processes. A compile of a small kernel costs about
 * 200 ms; a cache hit costs a hash of the source and, the first time in a process, a file read.
 *
 * <p>Every compile gets {@code -std=c++17 --gpu-architecture=<architecture>} followed by the
 * caller's options (for example {@code -lineinfo}, so that a kernel fault is reported with a
 * source line, or {@code -DNAME=value}). Headers are handed to NVRTC from memory, by the name
 * the source {@code #include}s them with: nothing is read from the file system.
 *
 * <p>The cache key is a SHA-256 over the NVRTC version, the architecture, the program name, the
 * options (in order), the source and every header's name and source (sorted by name), each
 * length-prefixed; any change to one of them compiles again. On disk each result is one file,
 * {@code <key>.kernel}, in {@link #cacheDirectory()}, laid out as (big-endian):
 * <pre>
 *  offset  width  field
 *       0      4  magic "JMKC"
 *       4      4  format version (1)
 *       8     32  the key (SHA-256), checked against the file name's
 *      40      4  L: bytes of the log
 *      44      L  NVRTC's log, UTF-8
 *    44+L      4  C: bytes of the cubin
 *    48+L      C  the cubin (an ELF image)
 *  48+L+C     32  SHA-256 of every byte before it
 * </pre>
 * Files are written to a temporary name and moved into place, so a reader sees a whole file or
 * none; a file that fails any check is compiled again and overwritten. Disk trouble never fails a
 * compile: it is logged (one line, {@code System.Logger}, WARNING) and the result is still
 * returned.
 *
 * <p>Thread-safe. Two threads compiling the same program at once may both run NVRTC; both get
 * the same result. {@code compile} blocks the calling thread for the compile: call it from a
 * thread that may block (not an event loop), for example under
 * {@code Mono.fromCallable(...).subscribeOn(Schedulers.boundedElastic())}.
 */
public final class KernelCompiler {

    private static final System.Logger LOG = Log.logger(KernelCompiler.class, Subsystem.INIT);

    /** Environment variable naming the directory of the disk cache. */
    static final String CACHE_DIR_ENV = "JMSCCLPP_CACHE_DIR";

    static final int MAGIC = 0x4A4D4B43; // "JMKC"
    static final int FORMAT_VERSION = 1;
    static final String SUFFIX = ".kernel";
    private static final int DIGEST_BYTES = 32;
    /** Larger files are not entries (cubins are kilobytes to a few megabytes): never read them whole. */
    private static final long MAX_ENTRY_BYTES = 256L << 20;
    private static final int HEADER_BYTES = 4 + 4 + DIGEST_BYTES;
    private static final Pattern ARCHITECTURE = Pattern.compile("sm_[0-9]{2,3}[a-z]?");
    private static final byte[] ELF_MAGIC = {0x7F, 'E', 'L', 'F'};
    private static final HexFormat HEX = HexFormat.of();

    private final Path cacheDirectory;
    private final ConcurrentHashMap<String, CompiledKernel> compiled = new ConcurrentHashMap<>();
    private final AtomicLong nvrtcCompilations = new AtomicLong();

    private KernelCompiler(Path cacheDirectory) {
        this.cacheDirectory = cacheDirectory;
    }

    /**
     * jmscclpp's device headers, name to source, for the {@code headers} argument of
     * {@link #compile}: kernels include {@code "jmscclpp/jmscclpp.cuh"} (or one concept's header,
     * such as {@code "jmscclpp/port_channel.cuh"}).
     */
    public static Map<String, String> deviceHeaders() {
        return DeviceHeaders.sources();
    }

    /**
     * A compiler whose disk cache is {@code $JMSCCLPP_CACHE_DIR} when set, else
     * {@code $XDG_CACHE_HOME/jmscclpp/kernels}, else {@code ~/.cache/jmscclpp/kernels}. The
     * directory is created on the first write.
     */
    public static KernelCompiler create() {
        return new KernelCompiler(defaultCacheDirectory(System::getenv, System.getProperty("user.home")));
    }

    /** A compiler whose disk cache is {@code cacheDirectory} (created on the first write). */
    public static KernelCompiler create(Path cacheDirectory) {
        return new KernelCompiler(Objects.requireNonNull(cacheDirectory, "cacheDirectory"));
    }

    /** The directory {@link #create()} uses, looked up in {@code env} (blank values count as unset). */
    static Path defaultCacheDirectory(Function<String, @Nullable String> env, String userHome) {
        String configured = env.apply(CACHE_DIR_ENV);
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        String xdg = env.apply("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(userHome, ".cache");
        return base.resolve("jmscclpp").resolve("kernels");
    }

    /** Where compiled kernels are kept across processes. */
    public Path cacheDirectory() {
        return cacheDirectory;
    }

    /** {@link #compile(String, String, String, Map, List)} with no options of the caller's. */
    public CompiledKernel compile(String name, String source, String architecture, Map<String, String> headers) {
        return compile(name, source, architecture, headers, List.of());
    }

    /**
     * The cubin of {@code source} for {@code architecture}: from this compiler's memory, else
     * from the disk cache, else compiled by NVRTC now (and then remembered in both). Blocks the
     * calling thread while NVRTC runs.
     *
     * @param name         the program's name, which NVRTC's messages use (for example {@code allgather.cu})
     * @param source       CUDA C++ source
     * @param architecture {@code sm_XY} (optionally with a suffix: {@code sm_90a})
     * @param headers      include name (as written in {@code #include "..."}) to header source
     * @param options      further NVRTC options, after {@code -std=c++17 --gpu-architecture=...}
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} (phase {@code compile}) when the
     *                           source does not compile or an option is invalid: the message names the
     *                           program and holds NVRTC's log; {@link ErrorCode#INVALID_USAGE} for an
     *                           architecture that is not {@code sm_XY}; {@link ErrorCode#SYSTEM_ERROR}
     *                           when NVRTC is unavailable (the message says what was tried) or fails
     *                           otherwise
     */
    public CompiledKernel compile(String name, String source, String architecture, Map<String, String> headers,
                                  List<String> options) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(architecture, "architecture");
        checkArchitecture(name, architecture);
        Map<String, String> sortedHeaders = new TreeMap<>(headers);
        List<String> userOptions = List.copyOf(options);
        String key = key(Nvrtc.version(), architecture, name, userOptions, source, sortedHeaders);
        CompiledKernel kernel = compiled.get(key);
        if (kernel != null) {
            return kernel;
        }
        kernel = readCache(key, name, architecture);
        if (kernel == null) {
            kernel = runNvrtc(name, source, architecture, sortedHeaders, userOptions);
            writeCache(key, kernel);
        }
        CompiledKernel raced = compiled.putIfAbsent(key, kernel);
        return raced != null ? raced : kernel;
    }

    /**
     * The PTX NVRTC makes of {@code source} for the virtual architecture matching
     * {@code architecture} ({@code sm_90} gives {@code compute_90}), for reading what a kernel
     * became. Not cached.
     *
     * @throws JmscclppException as {@link #compile(String, String, String, Map, List)}
     */
    public String ptx(String name, String source, String architecture, Map<String, String> headers,
                      List<String> options) {
        checkArchitecture(name, architecture);
        String virtual = "compute_" + architecture.substring("sm_".length());
        byte[] ptx = succeeded(name, virtual, Nvrtc.compile(name, source, new TreeMap<>(headers),
                nvrtcOptions(virtual, options), Nvrtc.Product.PTX));
        int end = ptx.length;
        while (end > 0 && ptx[end - 1] == 0) {
            end--;
        }
        return new String(ptx, 0, end, StandardCharsets.UTF_8);
    }

    /** How many times this compiler ran NVRTC for {@link #compile}: cache hits do not count. */
    long nvrtcCompilations() {
        return nvrtcCompilations.get();
    }

    /** The file that holds (or would hold) the result for {@code key}. */
    Path cacheFile(String key) {
        return cacheDirectory.resolve(key + SUFFIX);
    }

    private static void checkArchitecture(String name, String architecture) {
        if (!ARCHITECTURE.matcher(architecture).matches()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot compile " + name + " for '" + architecture
                    + "': the architecture must look like sm_90").phase("compile").build();
        }
    }

    private static List<String> nvrtcOptions(String architecture, List<String> userOptions) {
        List<String> all = new ArrayList<>(userOptions.size() + 2);
        all.add("-std=c++17");
        all.add("--gpu-architecture=" + architecture);
        all.addAll(userOptions);
        return all;
    }

    private CompiledKernel runNvrtc(String name, String source, String architecture, Map<String, String> headers,
                                    List<String> userOptions) {
        long start = System.nanoTime();
        nvrtcCompilations.incrementAndGet();
        Nvrtc.Output output = Nvrtc.compile(name, source, headers, nvrtcOptions(architecture, userOptions),
                Nvrtc.Product.CUBIN);
        byte[] cubin = succeeded(name, architecture, output);
        LOG.log(Level.INFO, () -> "compiled " + name + " for " + architecture + " in " + (System.nanoTime() - start) / 1_000_000
                + " ms (" + cubin.length + " bytes of cubin" + (output.log().isEmpty() ? "" : ", with log") + ")");
        return new CompiledKernel(name, architecture, cubin, output.log());
    }

    private static byte[] succeeded(String name, String architecture, Nvrtc.Output output) {
        byte[] code = output.code();
        if (output.result() == Nvrtc.NVRTC_SUCCESS && code != null) {
            return code;
        }
        ErrorCode errorCode = output.result() == Nvrtc.NVRTC_ERROR_COMPILATION
                || output.result() == Nvrtc.NVRTC_ERROR_INVALID_OPTION ? ErrorCode.INVALID_USAGE : ErrorCode.SYSTEM_ERROR;
        throw JmscclppException.builder(errorCode, "NVRTC could not compile " + name + " for " + architecture + ": "
                + Nvrtc.describe(output.result()) + (output.log().isEmpty() ? "" : "\n" + output.log()))
                .phase("compile").build();
    }

    /** SHA-256 over every input of a compile, each length-prefixed so that no two inputs hash alike. */
    static String key(String nvrtcVersion, String architecture, String name, List<String> options, String source,
                      Map<String, String> sortedHeaders) {
        MessageDigest digest = sha256();
        field(digest, "jmscclpp kernel " + FORMAT_VERSION);
        field(digest, nvrtcVersion);
        field(digest, architecture);
        field(digest, name);
        digest.update(ByteBuffer.allocate(4).putInt(options.size()).array());
        options.forEach(o -> field(digest, o));
        field(digest, source);
        digest.update(ByteBuffer.allocate(4).putInt(sortedHeaders.size()).array());
        sortedHeaders.forEach((headerName, headerSource) -> {
            field(digest, headerName);
            field(digest, headerSource);
        });
        return HEX.formatHex(digest.digest());
    }

    private static void field(MessageDigest digest, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        digest.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        digest.update(bytes);
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "the JDK has no SHA-256").cause(e).build();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // disk cache

    private @Nullable CompiledKernel readCache(String key, String name, String architecture) {
        Path file = cacheFile(key);
        byte[] bytes;
        try {
            long size = Files.size(file);
            if (size > MAX_ENTRY_BYTES) {
                LOG.log(Level.WARNING, () -> "kernel cache: " + file + " is unusable (" + size + " bytes); compiling " + name
                        + " again");
                return null;
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, () -> "kernel cache: cannot read " + file + " (" + e + "); compiling " + name + " again");
            return null;
        }
        String problem = checkEntry(bytes, key);
        if (problem != null) {
            LOG.log(Level.WARNING, () -> "kernel cache: " + file + " is unusable (" + problem + "); compiling " + name + " again");
            return null;
        }
        ByteBuffer in = ByteBuffer.wrap(bytes);
        in.position(HEADER_BYTES);
        byte[] log = new byte[in.getInt()];
        in.get(log);
        byte[] cubin = new byte[in.getInt()];
        in.get(cubin);
        LOG.log(Level.DEBUG, () -> "kernel cache: " + name + " for " + architecture + " from " + file);
        return new CompiledKernel(name, architecture, cubin, new String(log, StandardCharsets.UTF_8));
    }

    /** Why {@code bytes} is not a whole, intact entry for {@code key}; {@code null} when it is. */
    static @Nullable String checkEntry(byte[] bytes, String key) {
        if (bytes.length < HEADER_BYTES + 8 + DIGEST_BYTES) {
            return "only " + bytes.length + " bytes";
        }
        ByteBuffer in = ByteBuffer.wrap(bytes);
        if (in.getInt() != MAGIC) {
            return "no JMKC magic";
        }
        int version = in.getInt();
        if (version != FORMAT_VERSION) {
            return "format version " + version;
        }
        byte[] storedKey = new byte[DIGEST_BYTES];
        in.get(storedKey);
        if (!HEX.formatHex(storedKey).equals(key)) {
            return "it holds another key";
        }
        int logBytes = in.getInt();
        if (logBytes < 0 || logBytes > in.remaining() - 4 - DIGEST_BYTES) {
            return "log length " + logBytes + " out of range";
        }
        in.position(in.position() + logBytes);
        int cubinBytes = in.getInt();
        if (cubinBytes != in.remaining() - DIGEST_BYTES) {
            return "cubin length " + cubinBytes + " does not match the file size";
        }
        int cubinAt = in.position();
        MessageDigest digest = sha256();
        digest.update(bytes, 0, bytes.length - DIGEST_BYTES);
        if (!MessageDigest.isEqual(digest.digest(),
                Arrays.copyOfRange(bytes, bytes.length - DIGEST_BYTES, bytes.length))) {
            return "checksum mismatch";
        }
        if (cubinBytes < ELF_MAGIC.length
                || !Arrays.equals(bytes, cubinAt, cubinAt + ELF_MAGIC.length, ELF_MAGIC, 0, ELF_MAGIC.length)) {
            return "the cubin is not an ELF image";
        }
        return null;
    }

    /** The bytes of the cache file for {@code key} holding {@code kernel}. */
    static byte[] encodeEntry(String key, CompiledKernel kernel) {
        byte[] log = kernel.log().getBytes(StandardCharsets.UTF_8);
        byte[] cubin = kernel.cubinView();
        ByteBuffer out = ByteBuffer.allocate(HEADER_BYTES + 4 + log.length + 4 + cubin.length + DIGEST_BYTES);
        out.putInt(MAGIC).putInt(FORMAT_VERSION).put(HEX.parseHex(key));
        out.putInt(log.length).put(log).putInt(cubin.length).put(cubin);
        MessageDigest digest = sha256();
        digest.update(out.array(), 0, out.position());
        out.put(digest.digest());
        return out.array();
    }

    private void writeCache(String key, CompiledKernel kernel) {
        Path file = cacheFile(key);
        @Nullable Path temporary = null;
        try {
            Files.createDirectories(cacheDirectory);
            temporary = Files.createTempFile(cacheDirectory, key, ".tmp");
            Files.write(temporary, encodeEntry(key, kernel));
            try {
                Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                // a file system without atomic rename: a reader may then see a partial file, which the checksum rejects
                Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING);
            }
            temporary = null;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, () -> "kernel cache: cannot write " + file + " (" + e + ")");
        } finally {
            if (temporary != null) {
                try {
                    Files.deleteIfExists(temporary);
                } catch (IOException ignored) {
                    // the write failure is already logged; a stray temporary file is harmless
                }
            }
        }
    }

    @Override
    public String toString() {
        return "KernelCompiler[" + cacheDirectory + ", " + compiled.size() + " in memory]";
    }
}
