package org.jmscclpp.nativebridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.jspecify.annotations.Nullable;

/**
 * {@link VerbsLayout} and {@link Verbs}' constants against rdma-core's {@code <infiniband/verbs.h>}:
 * a C program compiled with gcc prints {@code sizeof} of every structure and the {@code offsetof}
 * and width of every field the bindings use (the ops-table slots of post_send, post_recv and
 * poll_cq among them) and the value of every constant, and the test compares them with the Java
 * side; then the C program reads structures that the Java encoders wrote and prints what it finds
 * in each field. Skipped, with the reason, where gcc or the header is absent.
 */
class VerbsLayoutTest {

    /** C field path → {Java offset, width}. */
    private static final Map<String, long[]> FIELDS = new LinkedHashMap<>();
    /** C struct → Java size. */
    private static final Map<String, Long> SIZES = new LinkedHashMap<>();
    /** C constant → Java value. */
    private static final Map<String, Long> CONSTANTS = new LinkedHashMap<>();

    static {
        field("ibv_context", "ops.poll_cq", VerbsLayout.CONTEXT_OPS_POLL_CQ, 8);
        field("ibv_context", "ops.post_send", VerbsLayout.CONTEXT_OPS_POST_SEND, 8);
        field("ibv_context", "ops.post_recv", VerbsLayout.CONTEXT_OPS_POST_RECV, 8);
        field("ibv_qp", "context", VerbsLayout.QP_CONTEXT, 8);
        field("ibv_qp", "qp_num", VerbsLayout.QP_QP_NUM, 4);
        field("ibv_cq", "context", VerbsLayout.CQ_CONTEXT, 8);
        field("ibv_mr", "addr", VerbsLayout.MR_ADDR, 8);
        field("ibv_mr", "length", VerbsLayout.MR_LENGTH, 8);
        field("ibv_mr", "lkey", VerbsLayout.MR_LKEY, 4);
        field("ibv_mr", "rkey", VerbsLayout.MR_RKEY, 4);
        SIZES.put("ibv_device_attr", (long) VerbsLayout.DEVICE_ATTR_BYTES);
        field("ibv_device_attr", "max_qp_wr", VerbsLayout.DEVICE_ATTR_MAX_QP_WR, 4);
        field("ibv_device_attr", "max_cqe", VerbsLayout.DEVICE_ATTR_MAX_CQE, 4);
        field("ibv_device_attr", "max_qp_rd_atom", VerbsLayout.DEVICE_ATTR_MAX_QP_RD_ATOM, 4);
        field("ibv_device_attr", "atomic_cap", VerbsLayout.DEVICE_ATTR_ATOMIC_CAP, 4);
        field("ibv_device_attr", "phys_port_cnt", VerbsLayout.DEVICE_ATTR_PHYS_PORT_CNT, 1);
        SIZES.put("ibv_port_attr", (long) VerbsLayout.PORT_ATTR_BYTES);
        field("ibv_port_attr", "state", VerbsLayout.PORT_ATTR_STATE, 4);
        field("ibv_port_attr", "active_mtu", VerbsLayout.PORT_ATTR_ACTIVE_MTU, 4);
        field("ibv_port_attr", "lid", VerbsLayout.PORT_ATTR_LID, 2);
        field("ibv_port_attr", "link_layer", VerbsLayout.PORT_ATTR_LINK_LAYER, 1);
        SIZES.put("ibv_gid", (long) VerbsLayout.GID_BYTES);
        SIZES.put("ibv_qp_init_attr", (long) VerbsLayout.QP_INIT_ATTR_BYTES);
        field("ibv_qp_init_attr", "send_cq", VerbsLayout.QP_INIT_ATTR_SEND_CQ, 8);
        field("ibv_qp_init_attr", "recv_cq", VerbsLayout.QP_INIT_ATTR_RECV_CQ, 8);
        field("ibv_qp_init_attr", "cap.max_send_wr", VerbsLayout.QP_INIT_ATTR_MAX_SEND_WR, 4);
        field("ibv_qp_init_attr", "cap.max_recv_wr", VerbsLayout.QP_INIT_ATTR_MAX_RECV_WR, 4);
        field("ibv_qp_init_attr", "cap.max_send_sge", VerbsLayout.QP_INIT_ATTR_MAX_SEND_SGE, 4);
        field("ibv_qp_init_attr", "cap.max_recv_sge", VerbsLayout.QP_INIT_ATTR_MAX_RECV_SGE, 4);
        field("ibv_qp_init_attr", "qp_type", VerbsLayout.QP_INIT_ATTR_QP_TYPE, 4);
        field("ibv_qp_init_attr", "sq_sig_all", VerbsLayout.QP_INIT_ATTR_SQ_SIG_ALL, 4);
        SIZES.put("ibv_qp_attr", (long) VerbsLayout.QP_ATTR_BYTES);
        field("ibv_qp_attr", "qp_state", VerbsLayout.QP_ATTR_QP_STATE, 4);
        field("ibv_qp_attr", "path_mtu", VerbsLayout.QP_ATTR_PATH_MTU, 4);
        field("ibv_qp_attr", "rq_psn", VerbsLayout.QP_ATTR_RQ_PSN, 4);
        field("ibv_qp_attr", "sq_psn", VerbsLayout.QP_ATTR_SQ_PSN, 4);
        field("ibv_qp_attr", "dest_qp_num", VerbsLayout.QP_ATTR_DEST_QP_NUM, 4);
        field("ibv_qp_attr", "qp_access_flags", VerbsLayout.QP_ATTR_ACCESS_FLAGS, 4);
        field("ibv_qp_attr", "ah_attr.grh.dgid", VerbsLayout.QP_ATTR_DGID, 16);
        field("ibv_qp_attr", "ah_attr.grh.sgid_index", VerbsLayout.QP_ATTR_SGID_INDEX, 1);
        field("ibv_qp_attr", "ah_attr.grh.hop_limit", VerbsLayout.QP_ATTR_HOP_LIMIT, 1);
        field("ibv_qp_attr", "ah_attr.dlid", VerbsLayout.QP_ATTR_DLID, 2);
        field("ibv_qp_attr", "ah_attr.sl", VerbsLayout.QP_ATTR_SL, 1);
        field("ibv_qp_attr", "ah_attr.is_global", VerbsLayout.QP_ATTR_IS_GLOBAL, 1);
        field("ibv_qp_attr", "ah_attr.port_num", VerbsLayout.QP_ATTR_AH_PORT_NUM, 1);
        field("ibv_qp_attr", "pkey_index", VerbsLayout.QP_ATTR_PKEY_INDEX, 2);
        field("ibv_qp_attr", "max_rd_atomic", VerbsLayout.QP_ATTR_MAX_RD_ATOMIC, 1);
        field("ibv_qp_attr", "max_dest_rd_atomic", VerbsLayout.QP_ATTR_MAX_DEST_RD_ATOMIC, 1);
        field("ibv_qp_attr", "min_rnr_timer", VerbsLayout.QP_ATTR_MIN_RNR_TIMER, 1);
        field("ibv_qp_attr", "port_num", VerbsLayout.QP_ATTR_PORT_NUM, 1);
        field("ibv_qp_attr", "timeout", VerbsLayout.QP_ATTR_TIMEOUT, 1);
        field("ibv_qp_attr", "retry_cnt", VerbsLayout.QP_ATTR_RETRY_CNT, 1);
        field("ibv_qp_attr", "rnr_retry", VerbsLayout.QP_ATTR_RNR_RETRY, 1);
        SIZES.put("ibv_sge", (long) VerbsLayout.SGE_BYTES);
        field("ibv_sge", "addr", VerbsLayout.SGE_ADDR, 8);
        field("ibv_sge", "length", VerbsLayout.SGE_LENGTH, 4);
        field("ibv_sge", "lkey", VerbsLayout.SGE_LKEY, 4);
        SIZES.put("ibv_send_wr", (long) VerbsLayout.SEND_WR_BYTES);
        field("ibv_send_wr", "wr_id", VerbsLayout.SEND_WR_ID, 8);
        field("ibv_send_wr", "next", VerbsLayout.SEND_WR_NEXT, 8);
        field("ibv_send_wr", "sg_list", VerbsLayout.SEND_WR_SG_LIST, 8);
        field("ibv_send_wr", "num_sge", VerbsLayout.SEND_WR_NUM_SGE, 4);
        field("ibv_send_wr", "opcode", VerbsLayout.SEND_WR_OPCODE, 4);
        field("ibv_send_wr", "send_flags", VerbsLayout.SEND_WR_SEND_FLAGS, 4);
        field("ibv_send_wr", "imm_data", VerbsLayout.SEND_WR_IMM_DATA, 4);
        field("ibv_send_wr", "wr.rdma.remote_addr", VerbsLayout.SEND_WR_RDMA_REMOTE_ADDR, 8);
        field("ibv_send_wr", "wr.rdma.rkey", VerbsLayout.SEND_WR_RDMA_RKEY, 4);
        field("ibv_send_wr", "wr.atomic.remote_addr", VerbsLayout.SEND_WR_ATOMIC_REMOTE_ADDR, 8);
        field("ibv_send_wr", "wr.atomic.compare_add", VerbsLayout.SEND_WR_ATOMIC_COMPARE_ADD, 8);
        field("ibv_send_wr", "wr.atomic.swap", VerbsLayout.SEND_WR_ATOMIC_SWAP, 8);
        field("ibv_send_wr", "wr.atomic.rkey", VerbsLayout.SEND_WR_ATOMIC_RKEY, 4);
        SIZES.put("ibv_recv_wr", (long) VerbsLayout.RECV_WR_BYTES);
        field("ibv_recv_wr", "wr_id", VerbsLayout.RECV_WR_ID, 8);
        field("ibv_recv_wr", "next", VerbsLayout.RECV_WR_NEXT, 8);
        field("ibv_recv_wr", "sg_list", VerbsLayout.RECV_WR_SG_LIST, 8);
        field("ibv_recv_wr", "num_sge", VerbsLayout.RECV_WR_NUM_SGE, 4);
        SIZES.put("ibv_wc", (long) VerbsLayout.WC_BYTES);
        field("ibv_wc", "wr_id", VerbsLayout.WC_WR_ID, 8);
        field("ibv_wc", "status", VerbsLayout.WC_STATUS, 4);
        field("ibv_wc", "opcode", VerbsLayout.WC_OPCODE, 4);
        field("ibv_wc", "vendor_err", VerbsLayout.WC_VENDOR_ERR, 4);
        field("ibv_wc", "byte_len", VerbsLayout.WC_BYTE_LEN, 4);
        field("ibv_wc", "imm_data", VerbsLayout.WC_IMM_DATA, 4);
        field("ibv_wc", "qp_num", VerbsLayout.WC_QP_NUM, 4);

        CONSTANTS.put("IBV_ACCESS_LOCAL_WRITE", (long) Verbs.ACCESS_LOCAL_WRITE);
        CONSTANTS.put("IBV_ACCESS_REMOTE_WRITE", (long) Verbs.ACCESS_REMOTE_WRITE);
        CONSTANTS.put("IBV_ACCESS_REMOTE_READ", (long) Verbs.ACCESS_REMOTE_READ);
        CONSTANTS.put("IBV_ACCESS_REMOTE_ATOMIC", (long) Verbs.ACCESS_REMOTE_ATOMIC);
        CONSTANTS.put("IBV_QPT_RC", (long) Verbs.QPT_RC);
        CONSTANTS.put("IBV_QPS_INIT", (long) Verbs.QPS_INIT);
        CONSTANTS.put("IBV_QPS_RTR", (long) Verbs.QPS_RTR);
        CONSTANTS.put("IBV_QPS_RTS", (long) Verbs.QPS_RTS);
        CONSTANTS.put("IBV_QP_STATE", (long) Verbs.QP_STATE);
        CONSTANTS.put("IBV_QP_ACCESS_FLAGS", (long) Verbs.QP_ACCESS_FLAGS);
        CONSTANTS.put("IBV_QP_PKEY_INDEX", (long) Verbs.QP_PKEY_INDEX);
        CONSTANTS.put("IBV_QP_PORT", (long) Verbs.QP_PORT);
        CONSTANTS.put("IBV_QP_AV", (long) Verbs.QP_AV);
        CONSTANTS.put("IBV_QP_PATH_MTU", (long) Verbs.QP_PATH_MTU);
        CONSTANTS.put("IBV_QP_TIMEOUT", (long) Verbs.QP_TIMEOUT);
        CONSTANTS.put("IBV_QP_RETRY_CNT", (long) Verbs.QP_RETRY_CNT);
        CONSTANTS.put("IBV_QP_RNR_RETRY", (long) Verbs.QP_RNR_RETRY);
        CONSTANTS.put("IBV_QP_RQ_PSN", (long) Verbs.QP_RQ_PSN);
        CONSTANTS.put("IBV_QP_MAX_QP_RD_ATOMIC", (long) Verbs.QP_MAX_QP_RD_ATOMIC);
        CONSTANTS.put("IBV_QP_MIN_RNR_TIMER", (long) Verbs.QP_MIN_RNR_TIMER);
        CONSTANTS.put("IBV_QP_SQ_PSN", (long) Verbs.QP_SQ_PSN);
        CONSTANTS.put("IBV_QP_MAX_DEST_RD_ATOMIC", (long) Verbs.QP_MAX_DEST_RD_ATOMIC);
        CONSTANTS.put("IBV_QP_DEST_QPN", (long) Verbs.QP_DEST_QPN);
        CONSTANTS.put("IBV_WR_RDMA_WRITE", (long) Verbs.WR_RDMA_WRITE);
        CONSTANTS.put("IBV_WR_RDMA_WRITE_WITH_IMM", (long) Verbs.WR_RDMA_WRITE_WITH_IMM);
        CONSTANTS.put("IBV_WR_ATOMIC_FETCH_AND_ADD", (long) Verbs.WR_ATOMIC_FETCH_AND_ADD);
        CONSTANTS.put("IBV_SEND_SIGNALED", (long) Verbs.SEND_SIGNALED);
        CONSTANTS.put("IBV_WC_SUCCESS", (long) Verbs.WC_SUCCESS);
        CONSTANTS.put("IBV_WC_RECV_RDMA_WITH_IMM", (long) Verbs.WC_RECV_RDMA_WITH_IMM);
        CONSTANTS.put("IBV_PORT_ACTIVE", (long) Verbs.PORT_ACTIVE);
        CONSTANTS.put("IBV_LINK_LAYER_INFINIBAND", (long) Verbs.LINK_LAYER_INFINIBAND);
        CONSTANTS.put("IBV_LINK_LAYER_ETHERNET", (long) Verbs.LINK_LAYER_ETHERNET);
        CONSTANTS.put("IBV_ATOMIC_NONE", (long) Verbs.ATOMIC_NONE);
    }

    private static void field(String struct, String path, long offset, int width) {
        FIELDS.put(struct + "." + path, new long[] {offset, width});
    }

    /** Fields of the encoded structures the C program reads back: C path → the value the Java encoder wrote. */
    private static final Map<String, Long> RTR = new LinkedHashMap<>();
    private static final Map<String, Long> FETCH_ADD = new LinkedHashMap<>();

    static {
        RTR.put("qp_state", (long) Verbs.QPS_RTR);
        RTR.put("path_mtu", 5L);
        RTR.put("dest_qp_num", 0x00ab_cdefL);
        RTR.put("rq_psn", 0x0012_3456L);
        RTR.put("ah_attr.dlid", 0x4321L);
        RTR.put("ah_attr.is_global", 1L);
        RTR.put("ah_attr.grh.sgid_index", 3L);
        RTR.put("ah_attr.grh.hop_limit", 255L);
        RTR.put("ah_attr.grh.dgid.raw[0]", 0xfeL);
        RTR.put("ah_attr.grh.dgid.raw[15]", 0x0fL);
        RTR.put("ah_attr.port_num", 2L);
        RTR.put("max_dest_rd_atomic", 1L);
        RTR.put("min_rnr_timer", 12L);
        FETCH_ADD.put("wr_id", 0x1122_3344_5566_7788L);
        FETCH_ADD.put("opcode", (long) Verbs.WR_ATOMIC_FETCH_AND_ADD);
        FETCH_ADD.put("send_flags", (long) Verbs.SEND_SIGNALED);
        FETCH_ADD.put("num_sge", 1L);
        FETCH_ADD.put("wr.atomic.remote_addr", 0x7f00_1234_5678_9ab8L);
        FETCH_ADD.put("wr.atomic.compare_add", 0x0000_0001_0000_0002L);
        FETCH_ADD.put("wr.atomic.swap", 0L);
        FETCH_ADD.put("wr.atomic.rkey", 0x0bad_cafeL);
        FETCH_ADD.put("next", 0L);
    }

    private static final Map<String, long[]> C_FIELDS = new HashMap<>();
    private static final Map<String, Long> C_SIZES = new HashMap<>();
    private static final Map<String, Long> C_CONSTANTS = new HashMap<>();
    private static final Map<String, Long> C_VALUES = new HashMap<>();

    @TempDir
    static Path dir;

    @BeforeAll
    static void compileAndRun() throws IOException, InterruptedException {
        Path gcc = Executables.findOnPath("gcc");
        Assumptions.assumeTrue(gcc != null, "gcc is not on the PATH: the verbs layout is not checked here");
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/infiniband/verbs.h")),
                "/usr/include/infiniband/verbs.h is absent (install libibverbs-dev): the verbs layout is not checked here");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rtr = arena.allocate(VerbsLayout.QP_ATTR_BYTES, 8);
            byte[] gid = new byte[16];
            gid[0] = (byte) 0xfe;
            gid[15] = 0x0f;
            VerbsLayout.encodeQpAttrRtr(rtr, 5, 0x00ab_cdef, 0x0012_3456, 0x4321, true, gid, 3, 2);
            Files.write(dir.resolve("rtr.bin"), rtr.toArray(ValueLayout.JAVA_BYTE));
            MemorySegment wr = arena.allocate(VerbsLayout.SEND_WR_BYTES, 8);
            VerbsLayout.encodeFetchAddWr(wr, 0x1122_3344_5566_7788L, 0, Verbs.SEND_SIGNALED, 0x7f00_1234_5678_9ab8L,
                    0x0000_0001_0000_0002L, 0x0bad_cafe);
            Files.write(dir.resolve("fetchadd.bin"), wr.toArray(ValueLayout.JAVA_BYTE));
        }
        Path source = dir.resolve("layout.c");
        Files.writeString(source, program(), StandardCharsets.UTF_8);
        Path binary = dir.resolve("layout");
        String build = run(List.of(gcc.toString(), "-std=gnu11", "-o", binary.toString(), source.toString()));
        String out = run(List.of(binary.toString(), dir.resolve("rtr.bin").toString(),
                dir.resolve("fetchadd.bin").toString()));
        for (String line : out.split("\n")) {
            String[] w = line.strip().split(" ");
            switch (w[0]) {
                case "F" -> C_FIELDS.put(w[1], new long[] {Long.parseLong(w[2]), Long.parseLong(w[3])});
                case "S" -> C_SIZES.put(w[1], Long.parseLong(w[2]));
                case "C" -> C_CONSTANTS.put(w[1], Long.parseLong(w[2]));
                case "V" -> C_VALUES.put(w[1], Long.parseUnsignedLong(w[2]));
                default -> { }
            }
        }
        assertTrue(build.isEmpty() || !build.contains("error"), build);
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), () -> command + " did not finish in 60 s");
        assertEquals(0, p.exitValue(), () -> command + " failed:\n" + out);
        return out;
    }

    private static String program() {
        StringBuilder c = new StringBuilder("""
                #include <stdio.h>
                #include <stddef.h>
                #include <stdint.h>
                #include <unistd.h>
                #include <infiniband/verbs.h>
                #define F(s, f) printf("F %s.%s %zu %zu\\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))
                #define S(s) printf("S %s %zu\\n", #s, sizeof(struct s))
                #define C(k) printf("C %s %lld\\n", #k, (long long)(k))
                #define V(p, f) printf("V %s %llu\\n", #f, (unsigned long long)(p)->f)
                static void load(const char *file, void *to, size_t n) {
                  FILE *in = fopen(file, "rb");
                  if (!in || fread(to, 1, n, in) != n) { perror(file); _exit(2); }
                  fclose(in);
                }
                int main(int argc, char **argv) {
                  (void)argc;
                """);
        for (String struct : SIZES.keySet()) {
            // ibv_gid is a union, every other one a struct
            c.append(struct.equals("ibv_gid") ? "  printf(\"S ibv_gid %zu\\n\", sizeof(union ibv_gid));\n"
                    : "  S(" + struct + ");\n");
        }
        for (String f : FIELDS.keySet()) {
            int dot = f.indexOf('.');
            c.append("  F(").append(f, 0, dot).append(", ").append(f.substring(dot + 1)).append(");\n");
        }
        for (String k : CONSTANTS.keySet()) {
            c.append("  C(").append(k).append(");\n");
        }
        c.append("  struct ibv_qp_attr rtr; load(argv[1], &rtr, sizeof rtr);\n");
        for (String f : RTR.keySet()) {
            c.append("  V(&rtr, ").append(f).append(");\n");
        }
        c.append("  struct ibv_send_wr wr; load(argv[2], &wr, sizeof wr);\n");
        c.append("  printf(\"V wr.next %llu\\n\", (unsigned long long)(uintptr_t)wr.next);\n");
        for (String f : FETCH_ADD.keySet()) {
            if (!f.equals("next")) {
                c.append("  printf(\"V wr.%s %llu\\n\", \"").append(f).append("\", (unsigned long long)wr.")
                        .append(f).append(");\n");
            }
        }
        c.append("  return 0;\n}\n");
        return c.toString();
    }

    @Test
    void everyStructHasItsJavaSize() {
        SIZES.forEach((struct, size) -> assertEquals(size, C_SIZES.get(struct), "sizeof(struct " + struct + ")"));
    }

    @Test
    void everyFieldIsAtItsJavaOffsetWithItsWidth() {
        FIELDS.forEach((path, java) -> {
            long[] c = C_FIELDS.get(path);
            assertNotNull(c, () -> path + " was not printed");
            assertEquals(java[0], c[0], () -> "offsetof " + path);
            assertEquals(java[1], c[1], () -> "sizeof " + path);
        });
    }

    @Test
    void constantsEqualTheHeaders() {
        CONSTANTS.forEach((name, value) -> assertEquals(value, C_CONSTANTS.get(name), name));
    }

    @Test
    void theRtrAttributesReadInCAsJavaEncodedThem() {
        RTR.forEach((field, value) -> assertEquals(value, C_VALUES.get(field), "ibv_qp_attr." + field));
    }

    @Test
    void theFetchAddRequestReadsInCAsJavaEncodedIt() {
        FETCH_ADD.forEach((field, value) -> assertEquals(value, C_VALUES.get("wr." + field), "ibv_send_wr." + field));
    }

    /** Finds executables on the PATH. */
    static final class Executables {
        private Executables() {
        }

        static @Nullable Path findOnPath(String name) {
            String path = System.getenv("PATH");
            if (path == null) {
                return null;
            }
            for (String d : path.split(java.io.File.pathSeparator)) {
                Path candidate = Path.of(d, name);
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
            return null;
        }
    }
}
