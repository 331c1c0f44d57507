package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The rules the device headers and test kernels keep so that NVRTC, with no include path and no
 * C library, compiles them: checked on the sources, with no compiler, so they hold in every build.
 * Compiling is {@link DeviceHeadersCompileTest}'s.
 */
class DeviceHeadersTest {

    private static final Pattern INCLUDE = Pattern.compile("^\\s*#\\s*include\\s*(\\S+)", Pattern.MULTILINE);

    @Test
    void sourcesHoldEveryHeaderInIncludeOrder() {
        Map<String, String> sources = DeviceHeaders.sources();
        assertEquals(DeviceHeaders.NAMES, List.copyOf(sources.keySet()));
        sources.forEach((name, source) -> assertFalse(source.isBlank(), name + " is empty"));
    }

    @Test
    void theListNamesEveryHeaderOfTheIncludeDirectory() throws IOException, URISyntaxException {
        Set<String> files = new TreeSet<>();
        try (Stream<Path> list = Files.list(resourceDirectory(DeviceHeaders.RESOURCE_ROOT + "jmscclpp"))) {
            list.forEach(p -> files.add("jmscclpp/" + p.getFileName()));
        }
        assertEquals(files, new TreeSet<>(DeviceHeaders.NAMES), "headers on the class path vs DeviceHeaders.NAMES");
    }

    @Test
    void headersIncludeOnlyEarlierHeadersOfTheirOwn() {
        List<String> seen = new ArrayList<>();
        for (Map.Entry<String, String> header : DeviceHeaders.sources().entrySet()) {
            for (String include : includes(header.getValue())) {
                assertTrue(include.startsWith("\"jmscclpp/") && include.endsWith("\""), header.getKey()
                        + " includes " + include + ": only \"jmscclpp/...\" headers, which NVRTC gets in memory");
                String name = include.substring(1, include.length() - 1);
                assertTrue(seen.contains(name), header.getKey() + " includes " + name
                        + ", which is not an earlier entry of DeviceHeaders.NAMES");
            }
            seen.add(header.getKey());
        }
    }

    @Test
    void theMainHeaderIncludesAllOthers() {
        List<String> included = includes(DeviceHeaders.sources().get(DeviceHeaders.MAIN)).stream()
                .map(i -> i.substring(1, i.length() - 1)).toList();
        assertEquals(DeviceHeaders.NAMES.subList(0, DeviceHeaders.NAMES.size() - 1), included);
    }

    @Test
    void headersAreGuardedAndNamespaced() {
        for (Map.Entry<String, String> header : DeviceHeaders.sources().entrySet()) {
            String file = header.getKey().substring("jmscclpp/".length());
            String guard = "JMSCCLPP_" + file.replace(".cuh", "").toUpperCase() + "_CUH_";
            String source = header.getValue();
            int ifndef = source.indexOf("#ifndef " + guard + "\n#define " + guard + "\n");
            assertTrue(ifndef >= 0, header.getKey() + " starts its guard " + guard);
            assertTrue(source.substring(0, ifndef).lines().allMatch(l -> l.isBlank() || l.startsWith("//")),
                    header.getKey() + ": nothing but comments before the guard");
            assertTrue(source.stripTrailing().endsWith("#endif  // " + guard), header.getKey() + " ends its guard");
            if (!header.getKey().equals(DeviceHeaders.MAIN)) {
                assertTrue(source.contains("namespace jmscclpp {"), header.getKey() + " declares into namespace jmscclpp");
            }
        }
    }

    @Test
    void deviceFunctionsAreForceInlined() {
        for (Map.Entry<String, String> header : DeviceHeaders.sources().entrySet()) {
            header.getValue().lines().filter(l -> l.contains("__device__") && !l.contains("__forceinline__"))
                    .filter(l -> !l.trim().startsWith("//") && !l.contains("extern \"C\""))
                    .forEach(l -> {
                        throw new AssertionError(header.getKey() + ": a __device__ function that is not "
                                + "__forceinline__: " + l.trim());
                    });
        }
    }

    @Test
    void copyToWritesAnIncludeRoot(@TempDir Path dir) throws IOException {
        Path root = DeviceHeaders.copyTo(dir.resolve("include"));
        for (Map.Entry<String, String> header : DeviceHeaders.sources().entrySet()) {
            assertEquals(header.getValue(), Files.readString(root.resolve(header.getKey()), StandardCharsets.UTF_8));
        }
        // a second copy replaces the files
        Files.writeString(root.resolve(DeviceHeaders.MAIN), "stale");
        DeviceHeaders.copyTo(root);
        assertEquals(DeviceHeaders.sources().get(DeviceHeaders.MAIN),
                Files.readString(root.resolve(DeviceHeaders.MAIN), StandardCharsets.UTF_8));
    }

    @Test
    void kernelsIncludeTheMainHeaderOnlyAndExportUnmangledNames() throws IOException, URISyntaxException {
        Set<String> files = new TreeSet<>();
        try (Stream<Path> list = Files.list(resourceDirectory(TestKernels.KERNELS))) {
            list.forEach(p -> files.add(TestKernels.KERNELS + p.getFileName()));
        }
        assertEquals(files, new TreeSet<>(TestKernels.FILES), "kernel files on the class path vs TestKernels.FILES");
        List<String> all = new ArrayList<>(TestKernels.FILES);
        all.add(TestKernels.API);
        for (String name : all) {
            String source = TestKernels.source(name);
            assertEquals(List.of("\"" + DeviceHeaders.MAIN + "\""), includes(source), name + "'s includes");
            Matcher global = Pattern.compile("^(.*)__global__", Pattern.MULTILINE).matcher(source);
            int kernels = 0;
            while (global.find()) {
                if (!global.group(1).trim().startsWith("//")) {
                    assertEquals("extern \"C\"", global.group(1).trim(), name + ": kernels are extern \"C\"");
                    kernels++;
                }
            }
            assertTrue(kernels > 0, name + " defines kernels");
        }
    }

    private static List<String> includes(String source) {
        List<String> includes = new ArrayList<>();
        Matcher m = INCLUDE.matcher(source);
        while (m.find()) {
            includes.add(m.group(1));
        }
        return includes;
    }

    private static Path resourceDirectory(String name) throws URISyntaxException {
        URL url = DeviceHeadersTest.class.getClassLoader().getResource(name);
        assertNotNull(url, "no resource directory " + name);
        assertEquals("file", url.getProtocol(), "the tests read the resource directories from the build output");
        return Path.of(url.toURI());
    }
}
