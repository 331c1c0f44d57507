package org.jmscclpp.nativebridge;

import com.sun.jna.NativeLibrary;
import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Objects;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Downcalls through the JDK's foreign-function API ({@code java.lang.foreign}) into a shared library that JNA
 * loaded: the same file (JNA's {@link NativeLibrary#getFile()}, so an environment variable naming another file
 * counts for both), looked up with {@link SymbolLookup#libraryLookup(Path, Arena)} in the global arena, so it
 * is never unloaded (the loader hands back the handle JNA's load holds). The few calls whose binding cost matters go this way; JNA stays the binding of the rest.
 *
 * <p>Needs native access for the code that holds this class: {@code --enable-native-access=ALL-UNNAMED} on the
 * class path (what {@code bin/jmscclpp} and {@code bin/gpu-tests} pass), or
 * {@code --enable-native-access=org.jmscclpp.nativebridge} on the module path.
 */
public final class Downcalls {

    private static final Linker LINKER = Linker.nativeLinker();

    private final SymbolLookup lookup;
    private final String library;

    private Downcalls(SymbolLookup lookup, String library) {
        this.lookup = lookup;
        this.library = library;
    }

    /**
     * The symbols of the file JNA loaded as {@code library}: by its path where JNA found the file on a path it
     * searched; by its file name (the dynamic loader's search, which JNA's load made too) where JNA names a bare
     * file; the linker's default lookup (the C library) where JNA bound the process itself (JNA's {@code c}).
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the file cannot be opened, or native access
     *                           is denied to this module
     */
    @SuppressWarnings("restricted")  // native access is granted at launch, as the class comment says
    public static Downcalls of(NativeLibrary library) {
        File file = library.getFile();
        if (file == null) {
            return new Downcalls(LINKER.defaultLookup(), library.getName() + " (the linker's default lookup)");
        }
        String name = file.getPath();
        try {
            SymbolLookup lookup = file.isAbsolute() ? SymbolLookup.libraryLookup(file.toPath(), Arena.global())
                    : SymbolLookup.libraryLookup(name, Arena.global());
            return new Downcalls(lookup, name);
        } catch (IllegalArgumentException | IllegalCallerException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot open " + name
                    + " for foreign-function downcalls: " + e.getMessage()).phase("ffm").cause(e).build();
        }
    }

    /** The file (or name) whose symbols this looks up. */
    public String library() {
        return library;
    }

    /**
     * The address of {@code symbol}.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} naming the symbol and the library when it is
     *                           not exported
     */
    public MemorySegment address(String symbol) {
        Objects.requireNonNull(symbol, "symbol");
        return lookup.find(symbol).orElseThrow(() -> JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                "symbol " + symbol + " is not exported by " + library).phase("ffm").build());
    }

    /**
     * A downcall handle for {@code symbol} with {@code descriptor}. {@code critical} links it with
     * {@link Linker.Option#critical(boolean) Linker.Option.critical(false)}: no thread-state transition around
     * the call, for functions that return at once in every case and never call back into Java (a function that
     * can block would hold back every safepoint, the garbage collector's included, while it blocks). Arguments
     * are plain values and off-heap addresses; heap access is never allowed.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the symbol is not exported
     */
    @SuppressWarnings("restricted")
    public MethodHandle bind(String symbol, FunctionDescriptor descriptor, boolean critical) {
        Objects.requireNonNull(descriptor, "descriptor");
        MemorySegment address = address(symbol);
        return critical ? LINKER.downcallHandle(address, descriptor, Linker.Option.critical(false))
                : LINKER.downcallHandle(address, descriptor);
    }

    /**
     * Rethrows what a downcall handle's {@code invokeExact} threw: only what the JVM throws (a runtime exception or
     * an error), never a checked exception; declared to return one so that callers write {@code throw rethrow(t)}.
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("a downcall threw " + t, t);
    }

    @Override
    public String toString() {
        return "Downcalls[" + library + "]";
    }
}
