package org.jmscclpp.core.host;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.testkit.InMemoryBootstrap;

/**
 * The other process of {@link HostBackendProcessTest}. Modes:
 * <ul>
 *   <li>{@code write-back DIR MEMORY_HEX ENDPOINT_HEX HALF}: deserializes the parent's registered
 *       memory (2 * HALF bytes, which maps it through HOST_IPC), checks the parent's pattern in its
 *       first half, then connects to the parent's endpoint and writes a reply pattern into the
 *       second half (all but the last 8 bytes) and raises the token in the last 8 bytes to 1.</li>
 *   <li>{@code leak DIR COUNT exit|return}: allocates COUNT buffers, prints {@code created NAME
 *       exists=true|false} for each, and ends without closing them, by {@code System.exit(0)} or
 *       by returning from {@code main}.</li>
 *   <li>{@code hold DIR COUNT}: allocates COUNT buffers like {@code leak}, prints {@code holding} and
 *       waits to be killed (it exits with 4 when nobody did within two minutes).</li>
 * </ul>
 * Exit codes: 0 done, 1 bad arguments, 2 a check failed, 3 an exception, 4 a holder nobody killed.
 */
public final class ShmChild {

    private ShmChild() {
    }

    static byte parentPattern(long i) {
        return (byte) (i * 7 + 3);
    }

    static byte replyPattern(long i) {
        return (byte) (i * 13 + 5);
    }

    public static void main(String[] args) {
        try {
            switch (args.length > 0 ? args[0] : "") {
                case "write-back" -> writeBack(Path.of(args[1]), HexFormat.of().parseHex(args[2]),
                        HexFormat.of().parseHex(args[3]), Long.parseLong(args[4]));
                case "leak" -> {
                    leak(Path.of(args[1]), Integer.parseInt(args[2]));
                    if (args[3].equals("exit")) {
                        System.exit(0);
                    }
                }
                case "hold" -> {
                    leak(Path.of(args[1]), Integer.parseInt(args[2]));
                    System.out.println("holding");
                    System.out.flush();
                    // the test kills this process; the sleep only bounds the life of one it forgot
                    Thread.sleep(Duration.ofMinutes(2));
                    System.exit(4);
                }
                default -> {
                    System.out.println("usage: write-back DIR MEMORY_HEX ENDPOINT_HEX HALF | leak DIR COUNT exit|return"
                            + " | hold DIR COUNT");
                    System.exit(1);
                }
            }
        } catch (RuntimeException | InterruptedException e) {
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(3);
        }
    }

    private static void writeBack(Path dir, byte[] memory, byte[] endpoint, long half) {
        try (HostBackend backend = HostBackend.open(dir);
             Communicator comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend)) {
            RegisteredMemory parent = RegisteredMemory.deserialize(memory, backend);
            check(parent.isMapped() && !parent.isLocal(), "the parent's memory is not mapped here: " + parent);
            MemorySegment view = parent.hostSegment();
            for (long i = 0; i < half; i++) {
                check(view.get(ValueLayout.JAVA_BYTE, i) == parentPattern(i), "byte " + i + " of the parent's pattern");
            }
            System.out.println("read parent pattern");
            try (DeviceBuffer src = backend.allocate(half)) {
                MemorySegment s = src.hostSegment();
                for (long i = 0; i < half; i++) {
                    s.set(ValueLayout.JAVA_BYTE, i, replyPattern(i));
                }
                RegisteredMemory local = comm.registerMemory(src, TransportFlags.of(Transport.HOST_IPC));
                Endpoint mine = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
                try (Connection c = backend.ipcTransport().open(backend).connect(mine, Endpoint.deserialize(endpoint), new ConnectionContext(1, 0, 0))) {
                    c.write(parent, half, local, 0, half - 8);
                    c.updateAndSync(parent, 2 * half - 8, new AtomicLong(), 1);
                    c.flush(Duration.ofSeconds(10)).block(Duration.ofSeconds(10));
                }
                local.close();
            }
            parent.close();
            System.out.println("wrote reply");
        }
    }

    private static void leak(Path dir, int count) {
        HostBackend backend = HostBackend.open(dir);
        for (int i = 0; i < count; i++) {
            DeviceBuffer b = i % 2 == 0 ? backend.allocate(4096L * (i + 1)) : backend.allocateHostVisible(8);
            b.hostSegment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
            Path file = ((SharedMemoryBuffer) b).file();
            System.out.println("created " + file.getFileName() + " exists=" + Files.isRegularFile(file));
        }
        System.out.flush();
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("check failed: " + what);
            System.out.flush();
            System.exit(2);
        }
    }
}
