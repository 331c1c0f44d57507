package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every jar this build made names a valid module, as {@code jar --describe-module} would derive it: the three
 * library jars are explicit modules that export their API packages only, every other jar (tests, test kit,
 * sources, javadoc, the command line) an automatic module with a stated name. Runs after package, on the jars in
 * the modules' target folders.
 */
class ModuleJarsIT {

    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

    @Test
    void everyJarNamesAValidModule() throws IOException {
        Map<String, String> names = new TreeMap<>();
        for (String module : List.of("reactive-core", "bootstrap-netty", "native-bridge", "samples")) {
            try (Stream<Path> jars = Files.list(ROOT.resolve(module).resolve("target"))) {
                for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
                    Set<ModuleReference> found = ModuleFinder.of(jar).findAll(); // throws where jar would fail
                    assertEquals(1, found.size(), jar.toString());
                    names.put(jar.getFileName().toString(), found.iterator().next().descriptor().name());
                    try (JarFile j = new JarFile(jar.toFile())) {
                        assertTrue(j.getEntry("META-INF/LICENSE") != null, jar + " holds the license");
                    }
                }
            }
        }
        assertEquals("org.jmscclpp.core", names.get("jmscclpp-core-0.1.0-SNAPSHOT.jar"), names.toString());
        assertEquals("org.jmscclpp.bootstrap", names.get("jmscclpp-bootstrap-netty-0.1.0-SNAPSHOT.jar"));
        assertEquals("org.jmscclpp.nativebridge", names.get("jmscclpp-native-bridge-0.1.0-SNAPSHOT.jar"));
        assertEquals("org.jmscclpp.testkit", names.get("jmscclpp-core-0.1.0-SNAPSHOT-testkit.jar"));
        assertEquals("org.jmscclpp.samples", names.get("jmscclpp-samples.jar"));
    }

    @Test
    void theLibraryModulesExportTheirApiAndKeepTheRestInside() {
        ModuleDescriptor core = descriptor("reactive-core", "jmscclpp-core-0.1.0-SNAPSHOT.jar");
        assertFalse(core.isAutomatic());
        assertEquals(Set.of("org.jmscclpp.core", "org.jmscclpp.core.channel", "org.jmscclpp.core.collective",
                        "org.jmscclpp.core.host", "org.jmscclpp.core.metrics", "org.jmscclpp.core.metrics.micrometer",
                        "org.jmscclpp.core.packet", "org.jmscclpp.core.proxy", "org.jmscclpp.core.semaphore"),
                unqualifiedExports(core));
        assertEquals(Set.of("org.jmscclpp.bootstrap", "org.jmscclpp.nativebridge"), core.exports().stream()
                .filter(e -> e.source().equals("org.jmscclpp.core.spi")).findFirst().orElseThrow().targets());
        // the collectives of jobs that span hosts: for the engines of the jmscclpp modules only
        assertEquals(Set.of("org.jmscclpp.nativebridge"), core.exports().stream()
                .filter(e -> e.source().equals("org.jmscclpp.core.hierarchy")).findFirst().orElseThrow().targets());
        assertEquals(Set.of("org.jmscclpp.bootstrap"),
                unqualifiedExports(descriptor("bootstrap-netty", "jmscclpp-bootstrap-netty-0.1.0-SNAPSHOT.jar")));
        assertEquals(Set.of("org.jmscclpp.cuda", "org.jmscclpp.cuda.collective", "org.jmscclpp.cuda.kernel"),
                unqualifiedExports(descriptor("native-bridge", "jmscclpp-native-bridge-0.1.0-SNAPSHOT.jar")));
    }

    private static ModuleDescriptor descriptor(String module, String jar) {
        return ModuleFinder.of(ROOT.resolve(module).resolve("target").resolve(jar)).findAll().iterator().next()
                .descriptor();
    }

    private static Set<String> unqualifiedExports(ModuleDescriptor d) {
        return Set.copyOf(d.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source)
                .toList());
    }
}
