package org.jmscclpp.bench.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.jmscclpp.samples.CudaTools;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Nccl}'s picture of {@code nccl.h} against the real header, byte for byte: a C program
 * built with the host compiler prints {@code sizeof(ncclConfig_t)}, every field's offset and size,
 * the bytes of {@code NCCL_CONFIG_INITIALIZER} with {@code blocking = 0}, and the enum values the
 * Java code uses. The header's folder comes from the system property {@value #INCLUDE_PROPERTY} or
 * the environment variable {@value #INCLUDE_ENV} (the {@code include} folder of the
 * {@code nvidia-nccl-cu13} wheel, say); {@code nccl.h} includes {@code cuda_runtime.h}, looked for
 * in {@code /usr/local/cuda/include}. Skipped, with the reason, where either is missing (CI).
 */
class NcclConfigLayoutTest {

    static final String INCLUDE_PROPERTY = "jmscclpp.ncclInclude";
    static final String INCLUDE_ENV = "JMSCCLPP_NCCL_INCLUDE";
    private static final Path CUDA_INCLUDE = Path.of("/usr/local/cuda/include");

    /** Header constants the Java code relies on, by the C expression that gives them. */
    private static final Map<String, Long> CONSTANTS = new LinkedHashMap<>();

    static {
        CONSTANTS.put("ncclSuccess", (long) Nccl.SUCCESS);
        CONSTANTS.put("ncclUnhandledCudaError", (long) Nccl.UNHANDLED_CUDA_ERROR);
        CONSTANTS.put("ncclSystemError", (long) Nccl.SYSTEM_ERROR);
        CONSTANTS.put("ncclInternalError", (long) Nccl.INTERNAL_ERROR);
        CONSTANTS.put("ncclInvalidArgument", (long) Nccl.INVALID_ARGUMENT);
        CONSTANTS.put("ncclInvalidUsage", (long) Nccl.INVALID_USAGE);
        CONSTANTS.put("ncclRemoteError", (long) Nccl.REMOTE_ERROR);
        CONSTANTS.put("ncclInProgress", (long) Nccl.IN_PROGRESS);
        CONSTANTS.put("NCCL_UNIQUE_ID_BYTES", (long) Nccl.UNIQUE_ID_BYTES);
        CONSTANTS.put("sizeof(ncclUniqueId)", (long) Nccl.UNIQUE_ID_BYTES);
        CONSTANTS.put("NCCL_VERSION_CODE", (long) Nccl.HEADER_VERSION);
        CONSTANTS.put("NCCL_VERSION(2, 28, 9)", (long) Nccl.version(2, 28, 9));
        CONSTANTS.put("NCCL_VERSION(2, 8, 4)", (long) Nccl.version(2, 8, 4));
        CONSTANTS.put("NCCL_CONFIG_UNDEF_INT", (long) Nccl.CONFIG_UNDEF_INT);
        // the codes the samples' DataType hands over, and the element sizes allToAll offsets by
        CONSTANTS.put("ncclInt8", 0L);
        CONSTANTS.put("ncclUint8", 1L);
        CONSTANTS.put("ncclInt32", 2L);
        CONSTANTS.put("ncclUint32", 3L);
        CONSTANTS.put("ncclInt64", 4L);
        CONSTANTS.put("ncclUint64", 5L);
        CONSTANTS.put("ncclFloat16", 6L);
        CONSTANTS.put("ncclFloat32", 7L);
        CONSTANTS.put("ncclFloat64", 8L);
        CONSTANTS.put("ncclBfloat16", 9L);
        CONSTANTS.put("ncclFloat8e4m3", 10L);
        CONSTANTS.put("ncclFloat8e5m2", 11L);
        CONSTANTS.put("ncclNumTypes", 12L);
        CONSTANTS.put("ncclSum", 0L);
    }

    private static long size;
    private static final Map<String, long[]> FIELDS = new HashMap<>();
    private static final Map<String, Long> VALUES = new HashMap<>();
    private static byte[] initializer = new byte[0];

    @TempDir
    static Path dir;

    @BeforeAll
    static void buildAndRunLayoutProgram() throws IOException, InterruptedException {
        Path include = ncclInclude().orElse(null);
        if (include == null) {
            Assumptions.abort("no nccl.h: set -D" + INCLUDE_PROPERTY + "=DIR or " + INCLUDE_ENV
                    + "=DIR to a folder holding nccl.h (the nvidia-nccl-cu13 wheel's nvidia/nccl/include)");
        }
        Assumptions.assumeTrue(Files.isRegularFile(include.resolve("nccl.h")), "no nccl.h in " + include);
        Assumptions.assumeTrue(Files.isRegularFile(CUDA_INCLUDE.resolve("cuda_runtime.h")),
                "nccl.h needs cuda_runtime.h, which is not in " + CUDA_INCLUDE);
        Path cc = Stream.of("/usr/bin/gcc", "/usr/bin/cc", "/usr/local/bin/gcc").map(Path::of)
                .filter(Files::isExecutable).findFirst().orElse(null);
        Assumptions.assumeTrue(cc != null, "no C compiler (gcc or cc in /usr/bin)");
        Path source = dir.resolve("layout.c");
        Files.writeString(source, program(), StandardCharsets.UTF_8);
        Path binary = dir.resolve("layout");
        CudaTools.Result build = CudaTools.run(List.of(cc.toString(), "-std=c11", "-I" + include, "-I" + CUDA_INCLUDE,
                source.toString(), "-o", binary.toString()), dir, null);
        assertTrue(build.ok(), () -> "the layout program did not build:\n" + build.output());
        CudaTools.Result run = CudaTools.run(List.of(binary.toString()), dir, null);
        assertTrue(run.ok(), () -> "the layout program failed:\n" + run.output());
        parse(run.output());
    }

    static Optional<Path> ncclInclude() {
        String configured = System.getProperty(INCLUDE_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(INCLUDE_ENV);
        }
        return configured == null || configured.isBlank() ? Optional.empty() : Optional.of(Path.of(configured));
    }

    @Test
    void theConfigHasTheHeadersSizeAndEveryFieldItsOffset() {
        assertEquals(Nccl.CONFIG_BYTES, size, "sizeof(ncclConfig_t)");
        for (Nccl.ConfigField f : Nccl.CONFIG_FIELDS) {
            long[] c = FIELDS.get(f.name());
            assertEquals(f.offset(), c[0], "offsetof(ncclConfig_t, " + f.name() + ")");
            assertEquals(f.size(), c[1], "sizeof(ncclConfig_t." + f.name() + ")");
        }
    }

    @Test
    void theConfigBytesEqualTheInitializersWithBlockingOff() {
        byte[] java = Nccl.config(false).getByteArray(0, Nccl.CONFIG_BYTES);
        assertEquals(HexFormat.of().formatHex(initializer), HexFormat.of().formatHex(java));
    }

    @Test
    void constantsEqualTheHeaders() {
        for (Map.Entry<String, Long> c : CONSTANTS.entrySet()) {
            assertEquals(c.getValue(), VALUES.get(c.getKey()), c.getKey());
        }
    }

    private static String program() {
        StringBuilder c = new StringBuilder();
        c.append("// generated by NcclConfigLayoutTest\n")
                .append("#include <stddef.h>\n#include <stdio.h>\n#include \"nccl.h\"\n")
                .append("#define FIELD(f) printf(\"field %s %zu %zu\\n\", #f, offsetof(ncclConfig_t, f), "
                        + "sizeof(((ncclConfig_t*)0)->f));\n")
                .append("#define VALUE(v) printf(\"value %s %lld\\n\", #v, (long long)(v));\n")
                .append("int main(void) {\n")
                .append("  printf(\"size %zu\\n\", sizeof(ncclConfig_t));\n");
        for (Nccl.ConfigField f : Nccl.CONFIG_FIELDS) {
            c.append("  FIELD(").append(f.name()).append(")\n");
        }
        for (String v : CONSTANTS.keySet()) {
            c.append("  VALUE(").append(v).append(")\n");
        }
        c.append("  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;\n")
                .append("  config.blocking = 0;\n")
                .append("  const unsigned char* b = (const unsigned char*) &config;\n")
                .append("  printf(\"bytes \");\n")
                .append("  for (size_t i = 0; i < sizeof(config); i++) printf(\"%02x\", b[i]);\n")
                .append("  printf(\"\\n\");\n")
                .append("  return 0;\n}\n");
        return c.toString();
    }

    private static void parse(String output) {
        List<String> unknown = new ArrayList<>();
        for (String line : output.split("\n")) {
            String[] w = line.strip().split(" ");
            switch (w[0]) {
                case "size" -> size = Long.parseLong(w[1]);
                case "field" -> FIELDS.put(w[1], new long[] {Long.parseLong(w[2]), Long.parseLong(w[3])});
                case "bytes" -> initializer = HexFormat.of().parseHex(w[1]);
                case "value" -> VALUES.put(line.substring(6, line.lastIndexOf(' ')),
                        Long.parseLong(line.substring(line.lastIndexOf(' ') + 1)));
                default -> {
                    if (!line.isBlank()) {
                        unknown.add(line);
                    }
                }
            }
        }
        assertTrue(unknown.isEmpty(), () -> "unexpected output of the layout program: " + unknown);
    }
}
