package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.packet.LL16Packet;
import org.jmscclpp.core.packet.LL8Packet;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.ProxyTrigger;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA structs of the device headers against the Java encoders, byte for byte: a host
 * program built with nvcc prints {@code sizeof}, {@code alignof}, and every field's
 * {@code offsetof} and size, and the constants and trigger packing of {@code trigger.cuh}; each
 * handle is encoded in Java with a distinct value per field, and every C field must read its value
 * at its C offset. The program's field lists come from the tables here, and the fields of a
 * struct must tile it exactly, so a field added or moved on either side fails. Skipped where nvcc
 * is not installed; needs no GPU.
 */
class DeviceHandleLayoutTest {

    /** One C field: its path in the struct ("fifo.tail") and the value the Java encoder put there. */
    private record Field(String path, long value) {
    }

    /** What the C program printed about one field. */
    private record Placement(long offset, long size) {
    }

    private static final long RING = 0x7f00_1000_0000_0080L;
    private static final long HEAD = 0x7f00_2000_0000_0000L;
    private static final long TAIL = 0x7f00_1000_0000_0040L;
    private static final long TAIL_CACHE = 0x7f00_2000_0000_0008L;
    private static final int CAPACITY = 0x0000_0200;
    private static final long INBOUND = 0x7f00_3000_0000_0000L;
    private static final long REMOTE_INBOUND = 0x7f00_4000_0000_0000L;
    private static final long EXPECTED = 0x7f00_5000_0000_0000L;
    private static final int SEMAPHORE_ID = 0x0000_03a5;
    private static final long FLUSHED = 0x7f00_6000_0000_0018L;
    private static final int DST_ID = 0x0000_01f1;
    private static final int SRC_ID = 0x0000_010e;
    private static final long DST = 0x7f00_7000_0000_0000L;
    private static final long SRC = 0x7f00_8000_0000_0000L;
    private static final long PACKETS = 0x7f00_9000_0000_0000L;

    /** Each struct's fields in declaration order, with the value the Java encoder writes into each. */
    private static final Map<String, List<Field>> STRUCTS = new LinkedHashMap<>();
    /** Each struct's Java encoding with those values. */
    private static final Map<String, byte[]> ENCODED = new HashMap<>();
    /** Each struct's size as Java declares it. */
    private static final Map<String, Integer> JAVA_SIZES = new HashMap<>();

    static {
        List<Field> fifo = fifoFields("");
        add("FifoDeviceHandle", fifo, DeviceHandleSamples.fifo(RING, HEAD, TAIL, TAIL_CACHE, CAPACITY),
                DeviceHandleSamples.FIFO_BYTES);
        List<Field> h2d = List.of(new Field("inboundToken", INBOUND), new Field("expectedInbound", EXPECTED));
        add("Host2DeviceSemaphoreDeviceHandle", h2d, DeviceHandleSamples.host2DeviceSemaphore(INBOUND, EXPECTED),
                Host2DeviceSemaphore.DEVICE_HANDLE_BYTES);
        List<Field> d2d = List.of(new Field("inboundToken", INBOUND), new Field("remoteInboundToken", REMOTE_INBOUND),
                new Field("expectedInbound", EXPECTED));
        add("MemoryDevice2DeviceSemaphoreDeviceHandle", d2d,
                DeviceHandleSamples.memoryDevice2DeviceSemaphore(INBOUND, REMOTE_INBOUND, EXPECTED),
                MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES);
        List<Field> port = new ArrayList<>(List.of(new Field("semaphoreId", SEMAPHORE_ID), new Field("pad", 0),
                new Field("semaphore.inboundToken", INBOUND), new Field("semaphore.expectedInbound", EXPECTED)));
        port.addAll(fifoFields("fifo."));
        port.addAll(List.of(new Field("flushed", FLUSHED), new Field("dst", DST_ID), new Field("src", SRC_ID)));
        add("PortChannelDeviceHandle", port, DeviceHandleSamples.portChannel(SEMAPHORE_ID, INBOUND, EXPECTED, RING,
                HEAD, TAIL, TAIL_CACHE, CAPACITY, FLUSHED, DST_ID, SRC_ID), PortChannel.DEVICE_HANDLE_BYTES);
        List<Field> memory = List.of(new Field("semaphore.inboundToken", INBOUND),
                new Field("semaphore.remoteInboundToken", REMOTE_INBOUND),
                new Field("semaphore.expectedInbound", EXPECTED), new Field("dst", DST), new Field("src", SRC),
                new Field("packetBuffer", PACKETS));
        add("MemoryChannelDeviceHandle", memory, DeviceHandleSamples.memoryChannel(INBOUND, REMOTE_INBOUND, EXPECTED,
                DST, SRC, PACKETS), MemoryChannel.DEVICE_HANDLE_BYTES);
        long data1 = 0x1234_5678L;
        long data2 = 0x9abc_def0L;
        long flag = 0xcafe_0badL;
        add("LL16Packet", List.of(new Field("data1", data1), new Field("flag1", flag), new Field("data2", data2),
                new Field("flag2", flag)),
                packet(LL16Packet.BYTES, s -> LL16Packet.write(s, 0, (int) data1, (int) data2, (int) flag)),
                LL16Packet.BYTES);
        add("LL8Packet", List.of(new Field("data", data1), new Field("flag", flag)),
                packet(LL8Packet.BYTES, s -> LL8Packet.write(s, 0, (int) data1, (int) flag)), LL8Packet.BYTES);
        add("ProxyTrigger", List.of(new Field("fst", RING), new Field("snd", HEAD)), littleEndian(RING, HEAD), 16);
    }

    /** Triggers whose packing the C constructor must reproduce: type, dst id, dst offset, src id, src offset, size, semaphore. */
    private static final long[][] TRIGGERS = {
            {ProxyTrigger.DATA, 0, 0, 0, 0, 0, 0},
            {ProxyTrigger.DATA | ProxyTrigger.FLAG | ProxyTrigger.SYNC, ProxyTrigger.MAX_MEMORY_ID, ProxyTrigger.MAX_SIZE,
                    ProxyTrigger.MAX_MEMORY_ID, ProxyTrigger.MAX_SIZE, ProxyTrigger.MAX_SIZE, ProxyTrigger.MAX_SEMAPHORE_ID},
            {ProxyTrigger.FLAG, 5, 123_456, 7, 654_321, 1 << 20, 3},
            {ProxyTrigger.SYNC, 1, 2, 3, 4, 5, 6},
            {ProxyTrigger.DATA | ProxyTrigger.FLAG, 256, 1, 255, 0x8000_0000L, 4096, 512},
            {ProxyTrigger.DATA | ProxyTrigger.SYNC, 0x155, 0xdead_beefL, 0xaa, 0x1234_5678L, 0xcafe_f00dL, 0x2aa},
    };

    /** Constants of the headers that must equal the Java ones. */
    private static final Map<String, Long> CONSTANTS = new LinkedHashMap<>();

    static {
        CONSTANTS.put("TriggerData", (long) ProxyTrigger.DATA);
        CONSTANTS.put("TriggerFlag", (long) ProxyTrigger.FLAG);
        CONSTANTS.put("TriggerSync", (long) ProxyTrigger.SYNC);
        CONSTANTS.put("TriggerMaxMemoryId", (long) ProxyTrigger.MAX_MEMORY_ID);
        CONSTANTS.put("TriggerMaxSemaphoreId", (long) ProxyTrigger.MAX_SEMAPHORE_ID);
        CONSTANTS.put("TriggerCommitBit", DeviceHandleSamples.COMMIT_BIT);
        CONSTANTS.put("FifoStateBeforeTail", DeviceHandleSamples.FIFO_TAIL - DeviceHandleSamples.FIFO_STATE);
    }

    private static final Map<String, Placement> PLACEMENTS = new HashMap<>();
    private static final Map<String, long[]> SIZES = new HashMap<>();
    private static final Map<String, Long> C_CONSTANTS = new HashMap<>();
    private static final Map<Integer, long[]> C_TRIGGERS = new HashMap<>();

    @TempDir
    static Path dir;

    @BeforeAll
    static void buildAndRunLayoutProgram() throws IOException, InterruptedException {
        Path nvcc = Nvcc.require();
        Path include = DeviceHeaders.copyTo(dir.resolve("include"));
        Path source = dir.resolve("layout.cu");
        Files.writeString(source, program(), StandardCharsets.UTF_8);
        Path binary = dir.resolve("layout");
        Nvcc.Result build = Nvcc.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-I" + include, "-x", "cu",
                source.toString(), "-o", binary.toString()), dir);
        assertTrue(build.ok(), () -> "nvcc failed to build the layout program (exit " + build.exitCode() + "):\n"
                + build.output());
        Nvcc.Result run = Nvcc.run(List.of(binary.toString()), dir);
        assertTrue(run.ok(), () -> "the layout program failed (exit " + run.exitCode() + "):\n" + run.output());
        parse(run.output());
    }

    @Test
    void everyStructHasTheSizeOfItsJavaEncoding() {
        for (String struct : STRUCTS.keySet()) {
            long[] size = SIZES.get(struct);
            assertEquals(JAVA_SIZES.get(struct).longValue(), size[0], "sizeof(" + struct + ")");
            assertEquals(ENCODED.get(struct).length, size[0], "the Java encoding of " + struct);
        }
        assertEquals(16, SIZES.get("ProxyTrigger")[1], "alignof(ProxyTrigger): a slot is one 16-byte store");
        assertEquals(16, SIZES.get("LL16Packet")[1], "alignof(LL16Packet)");
        assertEquals(8, SIZES.get("LL8Packet")[1], "alignof(LL8Packet)");
    }

    @Test
    void everyFieldReadsTheValueJavaWroteThere() {
        for (Map.Entry<String, List<Field>> struct : STRUCTS.entrySet()) {
            byte[] bytes = ENCODED.get(struct.getKey());
            for (Field field : struct.getValue()) {
                Placement p = placement(struct.getKey(), field.path());
                assertEquals(field.value(), read(bytes, p), () -> struct.getKey() + "." + field.path() + " at offset "
                        + p.offset() + " (" + p.size() + " bytes) of " + HexFormat.ofDelimiter(" ").formatHex(bytes));
            }
        }
    }

    @Test
    void fieldsTileTheirStructWithoutGapsOrOverlaps() {
        for (Map.Entry<String, List<Field>> struct : STRUCTS.entrySet()) {
            long end = 0;
            for (Field field : struct.getValue()) {
                Placement p = placement(struct.getKey(), field.path());
                assertEquals(end, p.offset(), struct.getKey() + "." + field.path() + " follows the previous field");
                end = p.offset() + p.size();
            }
            assertEquals(SIZES.get(struct.getKey())[0], end, struct.getKey() + "'s fields fill it");
        }
    }

    @Test
    void constantsEqualTheJavaOnes() {
        for (Map.Entry<String, Long> constant : CONSTANTS.entrySet()) {
            assertEquals(constant.getValue(), C_CONSTANTS.get(constant.getKey()), constant.getKey());
        }
    }

    @Test
    void triggerConstructorPacksAsProxyTriggerOf() {
        for (int i = 0; i < TRIGGERS.length; i++) {
            long[] t = TRIGGERS[i];
            ProxyTrigger java = ProxyTrigger.of((int) t[0], (int) t[1], t[2], (int) t[3], t[4], t[5], (int) t[6]);
            long[] c = C_TRIGGERS.get(i);
            String what = "trigger " + i + ": " + java;
            assertEquals(java.fst(), c[0], what + ", fst");
            assertEquals(java.snd(), c[1], what + ", snd");
            // the C accessors read back the fields the constructor packed
            assertEquals(java.size(), c[2], what + ", size()");
            assertEquals(java.srcOffset(), c[3], what + ", srcOffset()");
            assertEquals(java.dstOffset(), c[4], what + ", dstOffset()");
            assertEquals(java.srcMemoryId(), c[5], what + ", srcMemoryId()");
            assertEquals(java.dstMemoryId(), c[6], what + ", dstMemoryId()");
            assertEquals(java.type(), c[7], what + ", type()");
            assertEquals(java.semaphoreId(), c[8], what + ", semaphoreId()");
        }
    }

    @Test
    void realFifoHandleThroughThePublicApi(@TempDir Path shm) {
        try (HostBackend backend = HostBackend.open(shm); Fifo fifo = Fifo.create(backend, 64)) {
            ByteBuffer out = ByteBuffer.allocate(DeviceHandleSamples.FIFO_BYTES);
            fifo.encodeDeviceHandle(out);
            byte[] bytes = out.array();
            long base = fifo.buffer().address();
            String s = "FifoDeviceHandle";
            assertField(base + DeviceHandleSamples.FIFO_RING, bytes, s, "triggers");
            assertField(base + DeviceHandleSamples.FIFO_HEAD, bytes, s, "head");
            assertField(base + DeviceHandleSamples.FIFO_TAIL, bytes, s, "tail");
            assertField(base + DeviceHandleSamples.FIFO_TAIL_CACHE, bytes, s, "tailCache");
            assertField(64, bytes, s, "capacity");
            assertField(0, bytes, s, "pad");
            // where FifoDeviceHandle::proxyState looks: the word the proxy marks when it stops
            assertEquals(base + DeviceHandleSamples.FIFO_STATE,
                    read(bytes, placement(s, "tail")) - C_CONSTANTS.get("FifoStateBeforeTail"));
        }
    }

    @Test
    void realPortChannelHandleThroughThePublicApi(@TempDir Path shm) {
        DeviceHandleSamples.PortChannelSample sample = DeviceHandleSamples.portChannel(shm, 128);
        byte[] h = sample.handle();
        String s = "PortChannelDeviceHandle";
        assertField(sample.semaphoreId(), h, s, "semaphoreId");
        assertField(sample.inboundToken(), h, s, "semaphore.inboundToken");
        assertField(sample.expectedInbound(), h, s, "semaphore.expectedInbound");
        assertField(sample.fifoBase() + DeviceHandleSamples.FIFO_RING, h, s, "fifo.triggers");
        assertField(sample.head(), h, s, "fifo.head");
        assertField(sample.fifoBase() + DeviceHandleSamples.FIFO_TAIL, h, s, "fifo.tail");
        assertField(sample.tailCache(), h, s, "fifo.tailCache");
        assertField(sample.capacity(), h, s, "fifo.capacity");
        assertEquals(128, sample.capacity());
        assertField(sample.flushed(), h, s, "flushed");
        assertField(sample.dst(), h, s, "dst");
        assertField(sample.src(), h, s, "src");
        assertNotEquals(sample.dst(), sample.src(), "the fixture's memory ids differ, so a swap would show");
    }

    @Test
    void realMemoryChannelHandleThroughThePublicApi(@TempDir Path shm) {
        DeviceHandleSamples.MemoryChannelSample sample = DeviceHandleSamples.memoryChannel(shm);
        byte[] h = sample.handle();
        String s = "MemoryChannelDeviceHandle";
        assertField(sample.dst(), h, s, "dst");
        assertField(sample.src(), h, s, "src");
        assertField(sample.packetBuffer(), h, s, "packetBuffer");
        long inbound = read(h, placement(s, "semaphore.inboundToken"));
        long remote = read(h, placement(s, "semaphore.remoteInboundToken"));
        long expected = read(h, placement(s, "semaphore.expectedInbound"));
        assertTrue(inbound != 0 && remote != 0 && expected != 0, "the semaphore's three words are set");
        assertEquals(3, Set.of(inbound, remote, expected).size(), "the semaphore's three words differ");
    }

    // ---------------------------------------------------------------------------------------------

    private static List<Field> fifoFields(String prefix) {
        return List.of(new Field(prefix + "triggers", RING), new Field(prefix + "head", HEAD),
                new Field(prefix + "tail", TAIL), new Field(prefix + "tailCache", TAIL_CACHE),
                new Field(prefix + "capacity", CAPACITY), new Field(prefix + "pad", 0));
    }

    private static void add(String struct, List<Field> fields, byte[] encoded, int javaSize) {
        STRUCTS.put(struct, fields);
        ENCODED.put(struct, encoded);
        JAVA_SIZES.put(struct, javaSize);
    }

    private static byte[] packet(int bytes, Consumer<MemorySegment> writer) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(bytes, bytes);
            writer.accept(segment);
            return segment.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static byte[] littleEndian(long... words) {
        ByteBuffer b = ByteBuffer.allocate(8 * words.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long w : words) {
            b.putLong(w);
        }
        return b.array();
    }

    private static void assertField(long expected, byte[] bytes, String struct, String path) {
        Placement p = placement(struct, path);
        assertEquals(expected, read(bytes, p), () -> struct + "." + path + " at offset " + p.offset());
    }

    private static Placement placement(String struct, String path) {
        Placement p = PLACEMENTS.get(struct + " " + path);
        if (p == null) {
            throw new AssertionError("the layout program printed no field " + struct + "." + path);
        }
        return p;
    }

    /** The little-endian unsigned value of the C field's bytes in the Java encoding. */
    private static long read(byte[] bytes, Placement p) {
        assertTrue(p.size() == 4 || p.size() == 8, "fields are 4 or 8 bytes, " + p);
        assertTrue(p.offset() + p.size() <= bytes.length, "the field lies within the Java encoding, " + p);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        return p.size() == 8 ? b.getLong((int) p.offset()) : Integer.toUnsignedLong(b.getInt((int) p.offset()));
    }

    /** The host program: prints what the tables above ask about the structs, the constants and the triggers. */
    private static String program() {
        StringBuilder c = new StringBuilder();
        c.append("// generated by DeviceHandleLayoutTest\n")
                .append("#include <cstddef>\n#include <cstdio>\n#include \"jmscclpp/jmscclpp.cuh\"\n")
                .append("using namespace jmscclpp;\n")
                .append("#define SIZE(S) std::printf(\"size %s %zu %zu\\n\", #S, sizeof(S), alignof(S));\n")
                .append("#define FIELD(S, f) std::printf(\"field %s %s %zu %zu\\n\", #S, #f, offsetof(S, f), "
                        + "sizeof(((S*)0)->f));\n")
                .append("#define CONSTANT(c) std::printf(\"constant %s %llu\\n\", #c, (unsigned long long)(c));\n")
                .append("static void trigger(int i, ProxyTrigger t) {\n")
                .append("  std::printf(\"trigger %d %llu %llu %llu %llu %llu %u %u %u %u\\n\", i, t.fst, t.snd, t.size(),"
                        + " t.srcOffset(), t.dstOffset(), t.srcMemoryId(), t.dstMemoryId(), t.type(), t.semaphoreId());\n")
                .append("}\n")
                .append("int main() {\n");
        for (Map.Entry<String, List<Field>> struct : STRUCTS.entrySet()) {
            c.append("  SIZE(").append(struct.getKey()).append(")\n");
            for (Field field : struct.getValue()) {
                c.append("  FIELD(").append(struct.getKey()).append(", ").append(field.path()).append(")\n");
            }
        }
        for (String constant : CONSTANTS.keySet()) {
            c.append("  CONSTANT(").append(constant).append(")\n");
        }
        for (int i = 0; i < TRIGGERS.length; i++) {
            long[] t = TRIGGERS[i];
            c.append("  trigger(").append(i).append(", ProxyTrigger(");
            for (int k = 0; k < t.length; k++) {
                c.append(k == 0 ? "" : ", ").append(Long.toUnsignedString(t[k])).append("ULL");
            }
            c.append("));\n");
        }
        c.append("  return 0;\n}\n");
        return c.toString();
    }

    private static void parse(String output) {
        for (String line : output.split("\n")) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "size" -> SIZES.put(w[1], new long[] {Long.parseLong(w[2]), Long.parseLong(w[3])});
                case "field" -> PLACEMENTS.put(w[1] + " " + w[2], new Placement(Long.parseLong(w[3]),
                        Long.parseLong(w[4])));
                case "constant" -> C_CONSTANTS.put(w[1], Long.parseUnsignedLong(w[2]));
                case "trigger" -> {
                    long[] values = new long[w.length - 2];
                    for (int k = 0; k < values.length; k++) {
                        values[k] = Long.parseUnsignedLong(w[k + 2]);
                    }
                    C_TRIGGERS.put(Integer.parseInt(w[1]), values);
                }
                default -> throw new AssertionError("unexpected line from the layout program: " + line);
            }
        }
        assertEquals(STRUCTS.keySet(), SIZES.keySet(), "structs printed");
        assertEquals(CONSTANTS.keySet(), C_CONSTANTS.keySet(), "constants printed");
        assertEquals(TRIGGERS.length, C_TRIGGERS.size(), "triggers printed");
    }
}
