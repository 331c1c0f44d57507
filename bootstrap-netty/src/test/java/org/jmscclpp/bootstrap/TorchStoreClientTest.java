package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The c10d TCPStore client: against PyTorch's own server (a python {@code TCPStore}, where torch is installed),
 * and against servers that are not a TCPStore, which need nothing.
 */
class TorchStoreClientTest {

    /** A python process that runs torch's TCPStore server and obeys "set KEY HEX" / "get KEY" on stdin. */
    private static final String PY_SERVER = """
            import sys
            from datetime import timedelta
            from torch.distributed import TCPStore
            s = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
            print(s.port, flush=True)
            for line in sys.stdin:
                cmd, key, *val = line.split()
                if cmd == "set":
                    s.set(key, bytes.fromhex(val[0])); print("ok", flush=True)
                elif cmd == "get":
                    print(s.get(key).hex(), flush=True)
            """;

    static boolean torchInstalled() {
        try {
            Process p = new ProcessBuilder("python3", "-c", "import torch.distributed").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private interface StoreTest {
        void run(int port) throws Exception;
    }

    /** Runs {@code test} against torch's own TCPStore server (a python process), skipped where torch is not installed. */
    private static void withTorchStore(StoreTest test) throws Exception {
        Assumptions.assumeTrue(torchInstalled(), "torch is not installed (pip install torch gives the CPU wheel); "
                + "CI does not install it, the wheel is too large for its budget");
        Process py = new ProcessBuilder("python3", "-c", PY_SERVER).redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(py.getInputStream(), StandardCharsets.UTF_8))) {
            test.run(Integer.parseInt(out.readLine().strip()));
        } finally {
            py.destroy();
            py.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static long deadlineIn(Duration d) {
        return System.nanoTime() + d.toNanos();
    }

    @Test
    void speaksToTorchsOwnTcpStoreServer() throws Exception {
        Assumptions.assumeTrue(torchInstalled(), "torch is not installed (pip install torch gives the CPU wheel); "
                + "CI does not install it, the wheel is too large for its budget");
        Process py = new ProcessBuilder("python3", "-c", PY_SERVER).redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(py.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter in = new PrintWriter(py.getOutputStream(), true, StandardCharsets.UTF_8)) {
            int port = Integer.parseInt(out.readLine().strip());
            try (TorchStoreClient client = TorchStoreClient.connect("127.0.0.1", port, deadlineIn(Duration.ofSeconds(20)), 1)) {
                // python sets, Java waits and gets
                in.println("set from_python 00ff7f80");
                assertEquals("ok", out.readLine());
                assertArrayEquals(new byte[] {0, -1, 127, -128}, client.waitAndGet("from_python"));
                // Java sets a unique id's 128 bytes, python gets them
                byte[] id = new byte[UniqueId.BYTES];
                for (int i = 0; i < id.length; i++) {
                    id[i] = (byte) (i * 37);
                }
                client.set("jmscclpp/unique_id/test/0", id);
                in.println("get jmscclpp/unique_id/test/0");
                assertEquals(HexFormat.of().formatHex(id), out.readLine());
                // a wait that python ends later
                CompletableFuture<byte[]> later = CompletableFuture.supplyAsync(() -> {
                    try (TorchStoreClient c = TorchStoreClient.connect("127.0.0.1", port,
                            deadlineIn(Duration.ofSeconds(20)), 2)) {
                        return c.waitAndGet("later");
                    }
                });
                assertTrue(!client.check("later", "check later"));
                in.println("set later 2a");
                assertEquals("ok", out.readLine());
                assertArrayEquals(new byte[] {42}, later.get(20, TimeUnit.SECONDS));
            }
            // a key nobody sets: TIMEOUT at the deadline, naming the key and the store
            try (TorchStoreClient client = TorchStoreClient.connect("127.0.0.1", port, deadlineIn(Duration.ofMillis(500)), 3)) {
                long t0 = System.nanoTime();
                JmscclppException e = assertThrows(JmscclppException.class, () -> client.waitAndGet("never"));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
                assertTrue(e.phase().contains("wait for never"), e.phase());
                assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
                assertEquals(3, e.rank());
                assertTrue(ms < 5_000, "the wait ended " + ms + " ms after it began");
            }
        } finally {
            py.destroy();
            py.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void twoRanksJoinThroughTorchsStoreAndTheStoresPortStaysTheStores() throws Exception {
        withTorchStore(port -> {
            RankEnvironment.Rendezvous store = new RankEnvironment.Rendezvous.TorchStore("127.0.0.1", port,
                    "jmscclpp/unique_id/run/0");
            BootstrapOptions options = BootstrapOptions.builder().initTimeout(Duration.ofSeconds(20)).build();
            Mono<TcpBootstrap> rank1 = new RankEnvironment(1, 2, 1, store).bootstrap(options);
            Mono<TcpBootstrap> rank0 = new RankEnvironment(0, 2, 0, store).bootstrap(options);
            var both = Mono.zip(rank1, rank0).block(Duration.ofSeconds(30));
            try (TcpBootstrap b1 = both.getT1(); TcpBootstrap b0 = both.getT2()) {
                byte[] all = Mono.zip(b0.allGather(new byte[] {10}, Duration.ofSeconds(10)),
                        b1.allGather(new byte[] {11}, Duration.ofSeconds(10))).block(Duration.ofSeconds(20)).getT2();
                assertArrayEquals(new byte[] {10, 11}, all);
            }
        });
    }

    @Test
    void theSameRanksBootstrapAgainThroughTheStoreWithANewIdEachTime() throws Exception {
        withTorchStore(port -> {
            RankEnvironment.Rendezvous store = new RankEnvironment.Rendezvous.TorchStore("127.0.0.1", port,
                    "jmscclpp/unique_id/again/0");
            BootstrapOptions options = BootstrapOptions.builder().initTimeout(Duration.ofSeconds(5)).build();
            RankEnvironment env0 = new RankEnvironment(0, 2, 0, store);
            RankEnvironment env1 = new RankEnvironment(1, 2, 1, store);
            for (int round = 0; round < 3; round++) {
                // rank 0 comes late: rank 1 must wait for this round's id, not take the last round's (whose root
                // is closed) from the store
                var both = Mono.zip(env1.bootstrap(options),
                        Mono.delay(Duration.ofMillis(300)).then(env0.bootstrap(options))).block(Duration.ofSeconds(20));
                try (TcpBootstrap b1 = both.getT1(); TcpBootstrap b0 = both.getT2()) {
                    byte[] all = Mono.zip(b0.allGather(new byte[] {(byte) round}, Duration.ofSeconds(10)),
                            b1.allGather(new byte[] {11}, Duration.ofSeconds(10))).block(Duration.ofSeconds(20)).getT2();
                    assertArrayEquals(new byte[] {(byte) round, 11}, all, "round " + round);
                }
            }
        });
    }

    @Test
    void aClosedPortIsATimeoutNamingTheAddress() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        long t0 = System.nanoTime();
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> TorchStoreClient.connect("127.0.0.1", port, deadlineIn(Duration.ofMillis(400)), 1));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
        assertTrue(e.getMessage().contains("refused"), e.getMessage());
        assertTrue(e.phase().contains("connect"), e.phase());
        assertTrue(ms >= 300 && ms < 5_000, "gave up after " + ms + " ms");
    }

    @Test
    void anUnresolvableHostIsInvalidUsage() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> TorchStoreClient.connect("no-such-host.invalid", 29500, deadlineIn(Duration.ofSeconds(2)), 0));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("no-such-host.invalid"), e.getMessage());
    }

    @Test
    void aServerThatAnswersLikeHttpIsNotAStore() throws Exception {
        JmscclppException e = against(s -> write(s, "HTTP/1.1 400 Bad Request\r\n\r\n"), Duration.ofSeconds(5));
        assertEquals(ErrorCode.REMOTE_ERROR, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("not a torch TCPStore"), e.getMessage());
        assertTrue(e.phase().contains("validate"), e.phase());
    }

    @Test
    void aServerThatHangsUpIsNotAStore() throws Exception {
        JmscclppException e = against(s -> { }, Duration.ofSeconds(5));
        assertEquals(ErrorCode.REMOTE_ERROR, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("closed the connection"), e.getMessage());
    }

    @Test
    void aServerThatSaysNothingTimesOutAtTheDeadline() throws Exception {
        long t0 = System.nanoTime();
        JmscclppException e = against(TorchStoreClientTest::readUntilClosed, Duration.ofMillis(400));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        assertTrue(e.phase().contains("torchrun store (validate)"), e.phase());
        assertTrue(ms < 5_000, "gave up after " + ms + " ms");
    }

    /** Connects a client to a one-connection server that does {@code behaviour} and then closes the connection. */
    private static JmscclppException against(Consumer<Socket> behaviour, Duration deadline) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread serve = Thread.ofVirtual().start(() -> {
                try (Socket s = server.accept()) {
                    behaviour.accept(s);
                } catch (IOException ignored) {
                    // the client gave up first
                }
            });
            try {
                return assertThrows(JmscclppException.class, () -> TorchStoreClient.connect("127.0.0.1",
                        server.getLocalPort(), deadlineIn(deadline), 1).close());
            } finally {
                serve.join(10_000);
            }
        }
    }

    private static void readUntilClosed(Socket s) {
        try {
            s.getInputStream().readAllBytes();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    private static void write(Socket s, String text) {
        try {
            OutputStream out = s.getOutputStream();
            out.write(text.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            s.shutdownOutput();
            s.getInputStream().readAllBytes();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
