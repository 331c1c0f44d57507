package org.jmscclpp.nativebridge;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * NVRTC, the CUDA runtime compiler ({@code libnvrtc.so.13}), through JNA direct mapping like
 * {@link CudaDriver}. A program ({@code nvrtcProgram}) travels as a {@code long}; out-parameters
 * are one-element arrays; strings NVRTC reads are NUL-terminated UTF-8 bytes built here
 * ({@link #cString}, {@link #cStrings}) because direct mapping takes no {@code String[]}.
 *
 * <p>Where the library comes from: the file {@code JMSCCLPP_NVRTC_LIBRARY} names when that is set;
 * otherwise JNA's search for {@code nvrtc} (the library path and the linker cache); otherwise the
 * first existing of {@link #KNOWN_PATHS}: the GPU hosts have NVRTC only under the toolkit's
 * {@code targets} folder, off every default path. When none loads, {@link #unavailableReason()}
 * lists each attempt and no native method may be called.
 */
public final class Nvrtc {

    public static final int NVRTC_SUCCESS = 0;
    public static final int NVRTC_ERROR_INVALID_OPTION = 5;
    public static final int NVRTC_ERROR_COMPILATION = 6;

    /** Environment variable naming the NVRTC library file to load instead of searching. */
    static final String LIBRARY_ENV = "JMSCCLPP_NVRTC_LIBRARY";

    /** Where CUDA 13 toolkits put NVRTC, tried in order after JNA's own search. */
    static final List<String> KNOWN_PATHS = List.of(
            "/usr/local/cuda/lib64/libnvrtc.so.13",
            "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13",
            "/usr/local/cuda/lib64/libnvrtc.so");

    /** How NVRTC is found: {@link #LIBRARY_ENV}, else JNA's search for {@code nvrtc}, else {@link #KNOWN_PATHS}. */
    static final LibraryLookup LOOKUP = new LibraryLookup(LIBRARY_ENV, "nvrtc", "JNA name nvrtc", "NVRTC (libnvrtc)",
            "libnvrtc.so.13");

    private static final @Nullable String UNAVAILABLE;
    private static final String LOADED_FROM;
    /** Held so that the builtins stay loaded: JNA unloads a library nothing references. */
    private static final @Nullable NativeLibrary BUILTINS;

    static {
        LibraryLookup.Resolution resolution = LOOKUP.resolve(System.getenv(LIBRARY_ENV), KNOWN_PATHS,
                NativeLibrary::getInstance);
        String reason = resolution.failure();
        NativeLibrary library = resolution.library();
        NativeLibrary builtins = null;
        if (library != null) {
            try {
                Native.register(Nvrtc.class, library);
                builtins = preloadBuiltins(library);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                reason = "NVRTC loaded from " + resolution.source() + " lacks a function jmscclpp needs: "
                        + e.getMessage();
            }
        }
        UNAVAILABLE = reason;
        LOADED_FROM = resolution.source();
        BUILTINS = builtins;
    }

    private Nvrtc() {
    }


    /**
     * Loads {@code libnvrtc-builtins.so.<major>.<minor>} from the folder NVRTC itself came from,
     * when it is there. NVRTC opens that library by bare name at its first compile, and the
     * dynamic loader would search only the default paths, which on the GPU hosts hold neither
     * library; a library already loaded under that name is found instead of searched for.
     * Returns the loaded library, or {@code null} when there is none beside NVRTC (NVRTC's own
     * search may still find one; if not, the compile fails with NVRTC's message saying so).
     */
    private static @Nullable NativeLibrary preloadBuiltins(NativeLibrary nvrtc) {
        int[] major = new int[1];
        int[] minor = new int[1];
        if (nvrtcVersion(major, minor) != NVRTC_SUCCESS || nvrtc.getFile() == null) {
            return null;
        }
        Path folder = nvrtc.getFile().toPath().toAbsolutePath().getParent();
        Path builtins = folder == null ? null
                : folder.resolve("libnvrtc-builtins.so." + major[0] + "." + minor[0]);
        if (builtins == null || !Files.isRegularFile(builtins)) {
            return null;
        }
        try {
            return NativeLibrary.getInstance(builtins.toString());
        } catch (UnsatisfiedLinkError e) {
            return null;
        }
    }

    /** Empty when NVRTC is registered; otherwise why it is not, listing what was tried. */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /** What the library was loaded as: a path or the JNA name {@code nvrtc}; empty when unavailable. */
    static String loadedFrom() {
        return LOADED_FROM;
    }

    /**
     * Throws {@link ErrorCode#SYSTEM_ERROR} with the {@linkplain #unavailableReason() reason} when
     * NVRTC is not registered.
     */
    static void requireAvailable() {
        if (UNAVAILABLE != null) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, UNAVAILABLE).phase("compile").build();
        }
    }

    /** {@code major.minor} of the loaded NVRTC, for example {@code 13.0}. */
    public static String version() {
        requireAvailable();
        int[] major = new int[1];
        int[] minor = new int[1];
        check(nvrtcVersion(major, minor), "nvrtcVersion");
        return major[0] + "." + minor[0];
    }

    /**
     * Throws unless {@code result} is {@code NVRTC_SUCCESS}: {@link ErrorCode#SYSTEM_ERROR} naming
     * {@code call} and NVRTC's name for the result.
     */
    static void check(int result, String call) {
        if (result != NVRTC_SUCCESS) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, call + " failed: " + describe(result))
                    .phase("compile").build();
        }
    }

    /** {@code NVRTC_ERROR_COMPILATION (6)} and the like. */
    public static String describe(int result) {
        Pointer text = nvrtcGetErrorString(result);
        return (text == null ? "nvrtcResult" : text.getString(0, StandardCharsets.UTF_8.name())) + " (" + result + ")";
    }

    /** {@code text} as NUL-terminated UTF-8. */
    static byte[] cString(String text) {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        byte[] terminated = new byte[utf8.length + 1];
        System.arraycopy(utf8, 0, terminated, 0, utf8.length);
        return terminated;
    }

    /**
     * A native {@code char*[]} of {@code strings}, in one block: the pointer array first, then
     * each string as NUL-terminated UTF-8; {@code null} for an empty list (NVRTC accepts that
     * with a count of zero). Keep the block reachable until the call that reads it returned.
     */
    static @Nullable Memory cStrings(List<String> strings) {
        if (strings.isEmpty()) {
            return null;
        }
        List<byte[]> encoded = new ArrayList<>(strings.size());
        long bytes = (long) strings.size() * Native.POINTER_SIZE;
        for (String s : strings) {
            byte[] c = cString(s);
            encoded.add(c);
            bytes += c.length;
        }
        Memory block = new Memory(bytes);
        long offset = (long) strings.size() * Native.POINTER_SIZE;
        for (int i = 0; i < encoded.size(); i++) {
            byte[] c = encoded.get(i);
            block.write(offset, c, 0, c.length);
            block.setPointer((long) i * Native.POINTER_SIZE, block.share(offset));
            offset += c.length;
        }
        return block;
    }

    /** What a compilation is asked to produce. */
    public enum Product {
        /** Machine code for one {@code sm_XY} architecture: an ELF image {@code cuModuleLoadData} takes. */
        CUBIN,
        /** PTX text, the virtual assembly (NUL-terminated, as NVRTC hands it out). */
        PTX
    }

    /**
     * What one compilation produced: NVRTC's result, its log (possibly empty) and, when the
     * result is {@code NVRTC_SUCCESS}, the requested product.
     */
    public record Output(int result, String log, byte @Nullable [] code) {
    }

    /**
     * Compiles {@code source} under the program name {@code name} with {@code headers} (include
     * name to source) available to {@code #include}, and {@code options}; blocks for the compile
     * (a few hundred ms for a small kernel).
     *
     * @return the output; a failed compilation is an output with its result and log, not an exception
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when NVRTC is unavailable or fails
     *                           outside the compilation proper (creating the program, fetching results)
     */
    public static Output compile(String name, String source, Map<String, String> headers, List<String> options,
                          Product product) {
        requireAvailable();
        List<String> includeNames = new ArrayList<>(headers.keySet());
        List<String> headerSources = new ArrayList<>(includeNames.size());
        includeNames.forEach(n -> headerSources.add(headers.get(n)));
        Memory headerBlock = cStrings(headerSources);
        Memory nameBlock = cStrings(includeNames);
        Memory optionBlock = cStrings(options);
        long[] program = new long[1];
        try {
            check(nvrtcCreateProgram(program, cString(source), cString(name), includeNames.size(), headerBlock,
                    nameBlock), "nvrtcCreateProgram(" + name + ")");
            try {
                int result = nvrtcCompileProgram(program[0], options.size(), optionBlock);
                String log = log(program[0], name);
                return new Output(result, log, result == NVRTC_SUCCESS ? product(program[0], name, product) : null);
            } finally {
                nvrtcDestroyProgram(program);
            }
        } finally {
            // NVRTC reads the strings during both calls: the blocks must stay allocated until then
            Reference.reachabilityFence(headerBlock);
            Reference.reachabilityFence(nameBlock);
            Reference.reachabilityFence(optionBlock);
        }
    }

    private static byte[] product(long program, String name, Product product) {
        long[] size = new long[1];
        byte[] code;
        if (product == Product.CUBIN) {
            check(nvrtcGetCUBINSize(program, size), "nvrtcGetCUBINSize(" + name + ")");
            code = new byte[Math.toIntExact(size[0])];
            check(nvrtcGetCUBIN(program, code), "nvrtcGetCUBIN(" + name + ")");
        } else {
            check(nvrtcGetPTXSize(program, size), "nvrtcGetPTXSize(" + name + ")");
            code = new byte[Math.toIntExact(size[0])];
            check(nvrtcGetPTX(program, code), "nvrtcGetPTX(" + name + ")");
        }
        return code;
    }

    private static String log(long program, String name) {
        long[] size = new long[1];
        check(nvrtcGetProgramLogSize(program, size), "nvrtcGetProgramLogSize(" + name + ")");
        if (size[0] <= 1) {
            return "";
        }
        byte[] log = new byte[Math.toIntExact(size[0])];
        check(nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog(" + name + ")");
        // the size counts the terminating NUL
        return new String(log, 0, log.length - 1, StandardCharsets.UTF_8).strip();
    }

    // ---------------------------------------------------------------------------------------------
    // natives (nvrtc.h, CUDA 13.0)

    static native int nvrtcVersion(int[] major, int[] minor);

    static native @Nullable Pointer nvrtcGetErrorString(int result);

    static native int nvrtcCreateProgram(long[] program, byte[] source, byte[] name, int numHeaders,
                                         @Nullable Pointer headers, @Nullable Pointer includeNames);

    static native int nvrtcCompileProgram(long program, int numOptions, @Nullable Pointer options);

    static native int nvrtcGetProgramLogSize(long program, long[] size);

    static native int nvrtcGetProgramLog(long program, byte[] log);

    static native int nvrtcGetCUBINSize(long program, long[] size);

    static native int nvrtcGetCUBIN(long program, byte[] cubin);

    static native int nvrtcGetPTXSize(long program, long[] size);

    static native int nvrtcGetPTX(long program, byte[] ptx);

    static native int nvrtcDestroyProgram(long[] program);
}
