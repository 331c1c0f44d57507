package org.jmscclpp.nativebridge;

import com.sun.jna.NativeLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * How a binding finds its shared library (NVRTC here, NCCL for the benchmarks): the file an environment variable
 * names, alone when set (a path the user chose; a failure there is reported, not papered over by a search);
 * otherwise the loader's own search for {@code searchName}, then each existing file of a list of known paths. A
 * failure lists every attempt with its error on one line.
 *
 * @param envName     the environment variable naming the file to load instead of searching
 * @param searchName  what the loader's search looks for ({@code nvrtc}, {@code libnccl.so.2})
 * @param searchLabel how the failure names that attempt
 * @param what        how the failure names the library ({@code NVRTC (libnvrtc)})
 * @param file        the file the failure advises {@code envName} to name
 */
public record LibraryLookup(String envName, String searchName, String searchLabel, String what, String file) {

    /** The outcome: the loaded library and what it was loaded as, or (library {@code null}) why not. */
    public record Resolution(@Nullable NativeLibrary library, String source, @Nullable String failure) {
    }

    /**
     * Looks for the library: {@code configured} (the value of {@link #envName}) alone when it is non-blank,
     * otherwise {@link #searchName}, then each existing file of {@code knownPaths}. {@code loader} is
     * {@link NativeLibrary#getInstance(String)} outside tests.
     */
    public Resolution resolve(@Nullable String configured, List<String> knownPaths,
                              Function<String, NativeLibrary> loader) {
        List<String> attempts = new ArrayList<>();
        if (configured != null && !configured.isBlank()) {
            try {
                return new Resolution(loader.apply(configured), configured, null);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                attempts.add(envName + "=" + configured + " (" + oneLine(e) + ")");
                return failed(attempts);
            }
        }
        try {
            return new Resolution(loader.apply(searchName), searchName, null);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            attempts.add(searchLabel + " (" + oneLine(e) + ")");
        }
        for (String path : knownPaths) {
            if (!Files.exists(Path.of(path))) {
                attempts.add(path + " (absent)");
                continue;
            }
            try {
                return new Resolution(loader.apply(path), path, null);
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                attempts.add(path + " (" + oneLine(e) + ")");
            }
        }
        return failed(attempts);
    }

    private Resolution failed(List<String> attempts) {
        StringJoiner tried = new StringJoiner("; ", what + " cannot be loaded; tried: ",
                ". Set " + envName + " to the path of " + file);
        attempts.forEach(tried::add);
        return new Resolution(null, "", tried.toString());
    }

    /**
     * The gist of a load error on one line. JNA's message spans lines: a preamble naming the library, the
     * loader's error once per place it looked (often twice alike), and the class path it searched for a bundled
     * copy; only the loader's errors say anything.
     */
    public static String oneLine(Throwable e) {
        String message = e.getMessage();
        if (message == null || message.isBlank()) {
            return e.getClass().getSimpleName();
        }
        String gist = message.lines().map(String::strip)
                .filter(line -> !line.isEmpty() && !line.startsWith("Unable to load library")
                        && !line.startsWith("Native library"))
                .distinct().collect(Collectors.joining("; "));
        return gist.isEmpty() ? message.lines().findFirst().orElse(message).strip() : gist;
    }
}
