package org.jmscclpp.core.proxy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.host.HostBackend;

/**
 * The other process of {@link FifoProcessTest}: {@code DIR HANDLE_HEX SIZE CAPACITY COUNT [TIMEOUT_MS]}
 * maps the parent's fifo buffer through {@code HOST_IPC} (the handle {@link Backend#exportMemory}
 * gave the parent), pushes {@link #trigger(long) trigger(0)} to {@code trigger(COUNT - 1)}, each
 * with a timeout of {@code TIMEOUT_MS} (60 s when not given), waits until the parent consumed the
 * last one, prints {@code pushed COUNT} and exits 0. A push that times out prints
 * {@code gave up after N pushed} and the exception, and exits 4. Exit codes: 1 bad arguments, 3
 * another exception (printed).
 */
public final class FifoChild {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private FifoChild() {
    }

    /** The child's trigger number {@code i}: every field derived from {@code i}, type never empty. */
    static ProxyTrigger trigger(long i) {
        return ProxyTrigger.of(1 + (int) (i % 7), (int) (i % 512), (i * 2_654_435_761L) & ProxyTrigger.MAX_SIZE,
                (int) ((i * 7) % 512), i ^ 0xABCD, i, (int) (i % 1024));
    }

    public static void main(String[] args) {
        if (args.length != 5 && args.length != 6) {
            System.out.println("usage: DIR HANDLE_HEX SIZE CAPACITY COUNT [TIMEOUT_MS]");
            System.exit(1);
        }
        Duration timeout = args.length == 6 ? Duration.ofMillis(Long.parseLong(args[5])) : TIMEOUT;
        try (HostBackend backend = HostBackend.open(Path.of(args[0]));
             DeviceBuffer mapping = backend.importMemory(Transport.HOST_IPC, HexFormat.of().parseHex(args[1]),
                     Long.parseLong(args[2]))) {
            FifoProducer producer = Fifo.producer(mapping, Integer.parseInt(args[3]));
            long count = Long.parseLong(args[4]);
            long last = -1;
            for (long i = 0; i < count; i++) {
                try {
                    last = producer.push(trigger(i), timeout);
                } catch (JmscclppException e) {
                    if (e.code() != ErrorCode.TIMEOUT) {
                        throw e;
                    }
                    System.out.println("gave up after " + i + " pushed: " + e.getMessage());
                    System.out.flush();
                    System.exit(4);
                }
            }
            producer.sync(last, TIMEOUT);
            System.out.println("pushed " + count);
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(3);
        }
    }
}
