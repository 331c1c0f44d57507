package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.bootstrap.wire.FrameDecoder;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.WireBytes;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.testkit.BootstrapChecks;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Misbehaving TCP clients, written with plain {@link Socket}s, against a real job of {@link #N}
 * ranks in this JVM: against the root while the job initializes (N-1 ranks started, the abuse,
 * then the last rank), and against a rank's listener once the job runs. In every case the job
 * still initializes and passes {@link BootstrapChecks}; the stray connection is dropped (or, if
 * silent, outlasted); and ranks that check in wrongly get INVALID_USAGE naming the conflict.
 */
class BadInputTest {

    private static final int N = 3;
    private static final Duration DEADLINE = Duration.ofSeconds(20);
    private static final int READ_TIMEOUT_MS = 5_000;
    private static final BootstrapOptions OPTIONS = BootstrapOptions.builderFrom(Map.of())
            .initTimeout(DEADLINE).operationTimeout(DEADLINE).build();

    private final List<TcpBootstrap> opened = new ArrayList<>();
    private final List<Socket> sockets = new ArrayList<>();

    @AfterEach
    void closeEverything() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        opened.forEach(TcpBootstrap::close);
        assertEquals(0, TcpBootstrap.eventLoopUsers(), "a bootstrap or root was left holding the event loops");
    }

    /** One job: rank 0 owns the root; ranks are started one by one. */
    private final class Job {
        final List<TcpBootstrap> ranks = new ArrayList<>();
        final UniqueId id;
        final TcpUniqueId wire;
        final CompletableFuture<List<JmscclppException>> problems;
        final List<CompletableFuture<TcpBootstrap>> inits = new ArrayList<>();

        Job() {
            for (int r = 0; r < N; r++) {
                ranks.add(bootstrap(r, N, OPTIONS));
                inits.add(null);
            }
            id = ranks.getFirst().createUniqueId();
            wire = TcpUniqueId.from(id);
            // Completes when the root closes (rank 0 ready), with everything the root refused.
            problems = ranks.getFirst().rootProblems().collectList().toFuture();
        }

        void start(int rank) {
            inits.set(rank, ranks.get(rank).initialize(id).toFuture());
        }

        void startAllBut(int last) {
            for (int r = 0; r < N; r++) {
                if (r != last) {
                    start(r);
                }
            }
        }

        /** Waits for every rank's initialize and runs the conformance checks on all of them. */
        void completesAndPassesChecks() {
            for (int r = 0; r < N; r++) {
                assertNotNull(inits.get(r), "rank " + r + " was never started");
                assertEquals(ranks.get(r), await(inits.get(r), "initialize of rank " + r));
            }
            BootstrapChecks.runAll(ranks, DEADLINE);
        }

        List<JmscclppException> rootProblems() {
            return await(problems, "the root's problem list");
        }
    }

    @Test
    void aWorldSizeBeyondTheLimitIsInvalidUsageNotAnExhaustedHeap() {
        for (int size : new int[] {TcpBootstrap.MAX_RANKS + 1, Integer.MAX_VALUE}) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> TcpBootstrap.create(1, size, OPTIONS));
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("at most " + TcpBootstrap.MAX_RANKS), e.getMessage());
        }
        // the limit itself is a job size (nothing is allocated before init)
        bootstrap(1, TcpBootstrap.MAX_RANKS, OPTIONS);
    }

    private TcpBootstrap bootstrap(int rank, int size, BootstrapOptions options) {
        TcpBootstrap b = TcpBootstrap.create(rank, size, options);
        opened.add(b);
        return b;
    }

    private Socket connect(InetSocketAddress to) throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        s.connect(to, READ_TIMEOUT_MS);
        s.setSoTimeout(READ_TIMEOUT_MS);
        s.setTcpNoDelay(true);
        return s;
    }

    private static <T> T await(CompletableFuture<T> f, String what) {
        try {
            return f.get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(what + " did not complete within " + DEADLINE, e);
        } catch (ExecutionException e) {
            throw new AssertionError(what + " failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for " + what, e);
        }
    }

    /** Reads until the other side closes; fails if it keeps the connection open past the read timeout. */
    private static byte[] readUntilClosed(Socket s) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                got.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            fail("the server kept the connection from " + s.getLocalSocketAddress() + " open for "
                    + READ_TIMEOUT_MS + " ms after bad input (received " + got.size() + " bytes)");
        } catch (SocketException e) {
            // a reset also means the server dropped us: it closed with our bytes still unread
        }
        return got.toByteArray();
    }

    /**
     * Runs the connecting side of the handshake with the root on {@code s} with {@code best} (an
     * outsider that knows the job secret), checks that the root announces its rank count, and sends
     * a proof made with {@code proofSecret}, then {@code then}.
     */
    private static void dialRoot(Socket s, byte[] best, byte[] secret, byte[] proofSecret, byte[] then)
            throws IOException {
        Preamble p = WireBytes.readPreamble(WireBytes.dial(s, best, secret, proofSecret, then, null));
        assertEquals(Preamble.TYPE_ROOT, p.type);
        assertEquals(N, p.receiverOrSize, "the root announces its rank count");
    }

    /** The payload of a {@link Frame#CHECK_IN}: rank, rank count, then one address-book entry. */
    private static byte[] checkInPayload(int rank, int size, long hostHash, InetSocketAddress listening) {
        ByteBuf buf = Unpooled.buffer(8 + AddressBook.ENTRY_BYTES);
        try {
            buf.writeIntLE(rank);
            buf.writeIntLE(size);
            AddressBook.writeEntry(buf, hostHash, 1, listening);
            return WireBytes.bytes(buf);
        } finally {
            buf.release();
        }
    }

    // ------------------------------------------------------------------ what a bad client sends

    /** Where the abuse is aimed. */
    enum Target { ROOT_DURING_INIT, LISTENER_AFTER_INIT }

    /** One kind of bad client. */
    enum Abuse {
        /** 256 random bytes. */
        GARBAGE,
        /** A well-formed preamble, then a proof made with another secret. */
        WRONG_SECRET,
        /** A well-formed preamble of another protocol version. */
        WRONG_VERSION,
        /** The job's secret on the wrong kind of socket (rank-to-rank at the root, root check-in at a listener). */
        WRONG_SOCKET_TYPE,
        /** The best preamble an outsider can make, then a frame length of almost 2 GiB. */
        OVERSIZED_LENGTH,
        /** The best preamble an outsider can make, then half a check-in frame, then close. */
        TRUNCATED_FRAME,
        /** Connects and sends nothing, held open while the job runs. */
        SILENT
    }

    /**
     * The best preamble an outsider with the job secret can make: a root check-in is fully valid at
     * the root; at a listener the job session (handed out by the root) is missing.
     */
    private static byte[] bestPreamble(Target target, int targetRank) {
        return target == Target.ROOT_DURING_INIT
                ? WireBytes.rootPreamble(N - 1, N)
                : WireBytes.preamble(Preamble.TYPE_PEER, Preamble.noSession(), (targetRank + 1) % N, targetRank);
    }

    /**
     * Performs {@code abuse} on a socket to {@code to} and checks the server's reaction; returns the
     * socket if it is to be held open while the job runs.
     */
    private Socket abuse(Abuse abuse, Target target, InetSocketAddress to, byte[] secret, int targetRank)
            throws IOException {
        Socket s = connect(to);
        byte[] best = bestPreamble(target, targetRank);
        boolean answered = target == Target.ROOT_DURING_INIT;
        switch (abuse) {
            case GARBAGE -> {
                byte[] garbage = new byte[256];
                new Random(42).nextBytes(garbage);
                s.getOutputStream().write(garbage);
                assertEquals(0, readUntilClosed(s).length, "garbage must get no answer");
            }
            case WRONG_SECRET -> {
                byte[] other = secret.clone();
                other[0] ^= 1;
                if (answered) {
                    dialRoot(s, best, secret, other, lengthField(20));
                } else {
                    s.getOutputStream().write(WireBytes.concat(best, new byte[Preamble.PROOF_BYTES], lengthField(20)));
                }
                assertEquals(0, readUntilClosed(s).length, "a wrong proof of the secret must get nothing more");
            }
            case WRONG_VERSION -> {
                byte[] pre = best.clone();
                pre[WireBytes.PREAMBLE_VERSION_OFFSET] = (byte) (Preamble.VERSION + 1);
                s.getOutputStream().write(pre);
                assertEquals(0, readUntilClosed(s).length, "a wrong version must get no answer");
            }
            case WRONG_SOCKET_TYPE -> {
                byte[] pre = target == Target.ROOT_DURING_INIT
                        ? WireBytes.preamble(Preamble.TYPE_PEER, Preamble.noSession(), 0, 1)
                        : WireBytes.rootPreamble(0, N);
                s.getOutputStream().write(pre);
                assertEquals(0, readUntilClosed(s).length, "the wrong socket type must get no answer");
            }
            case OVERSIZED_LENGTH -> {
                byte[] huge = WireBytes.concat(lengthField(0x7FFFFFF0), new byte[32]);
                if (answered) {
                    dialRoot(s, best, secret, secret, huge);
                } else {
                    s.getOutputStream().write(WireBytes.concat(best, new byte[Preamble.PROOF_BYTES], huge));
                }
                assertEquals(0, readUntilClosed(s).length, "nothing may follow the handshake");
            }
            case TRUNCATED_FRAME -> {
                byte[] checkIn = WireBytes.frame(Frame.CHECK_IN, Frame.LAST, 0, checkInPayload(N - 1, N, 1,
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), 9)));
                byte[] half = Arrays.copyOf(checkIn, checkIn.length / 2);
                if (answered) {
                    // Finish the handshake so the truncated frame reaches a connection the root accepted.
                    dialRoot(s, best, secret, secret, half);
                } else {
                    // A listener refuses the preamble at once: send everything before it can reset us.
                    s.getOutputStream().write(WireBytes.concat(best, half));
                }
                try {
                    s.shutdownOutput();
                } catch (SocketException alreadyReset) {
                    // the listener dropped us first, which is what readUntilClosed checks anyway
                }
                assertEquals(0, readUntilClosed(s).length, "a truncated frame must get no answer");
            }
            case SILENT -> {
                return s;
            }
        }
        return null;
    }

    private static byte[] lengthField(int length) {
        return new byte[] {(byte) length, (byte) (length >>> 8), (byte) (length >>> 16), (byte) (length >>> 24)};
    }

    @ParameterizedTest
    @EnumSource(Abuse.class)
    void rootDuringInitOutlivesABadClient(Abuse abuse) throws IOException {
        Job job = new Job();
        job.startAllBut(N - 1);
        abuse(abuse, Target.ROOT_DURING_INIT, job.wire.root(), job.wire.secret(), -1);
        job.start(N - 1);
        job.completesAndPassesChecks();
        assertEquals(List.of(), job.rootProblems(), "a stray connection is not a problem of the job");
    }

    @ParameterizedTest
    @EnumSource(Abuse.class)
    void listenerAfterInitOutlivesABadClient(Abuse abuse) throws IOException {
        Job job = new Job();
        job.startAllBut(-1);
        for (int r = 0; r < N; r++) {
            await(job.inits.get(r), "initialize of rank " + r);
        }
        int target = 1;
        AddressBook book = job.ranks.getFirst().addressBook();
        assertNotNull(book, "rank 0 has the address book after initialize");
        InetSocketAddress listener = book.address(target);
        assertEquals(listener, job.ranks.get(target).addressBook().address(target));
        abuse(abuse, Target.LISTENER_AFTER_INIT, listener, job.wire.secret(), target);
        job.completesAndPassesChecks();
        // Run the checks twice: the second round uses the connections opened by the first.
        BootstrapChecks.runAll(job.ranks, DEADLINE);
    }

    /**
     * Once the job is wired the root stops; a stray connection it accepted must not stay open until
     * its handshake deadline ({@link PeerLinks#HANDSHAKE_TIMEOUT_NANOS}).
     */
    @Test
    void silentConnectionToTheRootIsClosedWhenTheRootStops() throws IOException {
        Job job = new Job();
        job.startAllBut(N - 1);
        Socket held = connect(job.wire.root());
        job.start(N - 1);
        job.completesAndPassesChecks();
        assertTrue(TimeUnit.NANOSECONDS.toMillis(PeerLinks.HANDSHAKE_TIMEOUT_NANOS) > READ_TIMEOUT_MS,
                "the handshake deadline must be longer than the read timeout for this test to mean anything");
        assertEquals(0, readUntilClosed(held).length);
    }

    /**
     * A rank that closes must close the connections its listener accepted but never authenticated,
     * not leave them to their handshake deadline while the other ranks keep the event loops alive.
     */
    @Test
    void silentConnectionToAListenerIsClosedWhenTheRankCloses() throws IOException {
        Job job = new Job();
        job.startAllBut(-1);
        job.completesAndPassesChecks();
        int target = N - 1;
        Socket held = connect(job.ranks.getFirst().addressBook().address(target));
        BootstrapChecks.runAll(job.ranks, DEADLINE);
        job.ranks.get(target).close();
        assertEquals(0, readUntilClosed(held).length);
    }

    /**
     * The bytes an honest rank sent to the root (preamble, proof, check-in), recorded by a proxy in
     * front of the root and replayed from another socket, prove nothing: the root's answer carries a
     * fresh nonce, so the recorded proof does not fit, and the check-in behind it is never read (no
     * "rank already checked in" refusal that could hurt the real rank). The job completes.
     */
    @Test
    void replayedCheckInOfAnHonestRankIsRefused() throws Exception {
        Job job = new Job();
        for (int r = 0; r < N - 1; r++) {
            if (r != 1) {
                job.start(r);
            }
        }
        int checkInBytes = Preamble.BYTES + Preamble.PROOF_BYTES
                + WireBytes.frame(Frame.CHECK_IN, Frame.LAST, 0, new byte[8 + AddressBook.ENTRY_BYTES]).length;
        try (RecordingProxy proxy = new RecordingProxy(job.wire.root())) {
            // rank 1 checks in through the proxy, which records what it sends
            UniqueId viaProxy = new TcpUniqueId(proxy.address(), job.wire.secret()).toUniqueId();
            job.inits.set(1, job.ranks.get(1).initialize(viaProxy).toFuture());
            byte[] recorded = proxy.awaitClientBytes(checkInBytes, DEADLINE);

            Socket replay = connect(job.wire.root());
            replay.getOutputStream().write(recorded);
            byte[] got = readUntilClosed(replay);
            assertEquals(WireBytes.ANSWER_BYTES, got.length,
                    "the root answers the replayed preamble with a new challenge, then drops the connection");
            Preamble answer = WireBytes.readPreamble(Arrays.copyOf(got, Preamble.BYTES));
            assertEquals(N, answer.receiverOrSize);

            job.start(N - 1);
            job.completesAndPassesChecks();
        }
        assertEquals(List.of(), job.rootProblems(), "the replay must not reach the check-in logic");
    }

    /** A TCP proxy for one connection to {@code target} that records the bytes its client sends. */
    private static final class RecordingProxy implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        private final ByteArrayOutputStream fromClient = new ByteArrayOutputStream();
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();

        RecordingProxy(InetSocketAddress target) throws IOException {
            Thread.ofPlatform().daemon().name("recording-proxy").start(() -> {
                try {
                    Socket client = server.accept();
                    Socket upstream = new Socket();
                    sockets.add(client);
                    sockets.add(upstream);
                    upstream.connect(target, READ_TIMEOUT_MS);
                    Thread.ofPlatform().daemon().name("recording-proxy-down")
                            .start(() -> pump(upstream, client, null));
                    pump(client, upstream, fromClient);
                } catch (IOException e) {
                    // closed: the test is over
                }
            });
        }

        InetSocketAddress address() {
            return (InetSocketAddress) server.getLocalSocketAddress();
        }

        private void pump(Socket from, Socket to, @Nullable ByteArrayOutputStream record) {
            byte[] buf = new byte[4096];
            try {
                for (int n = from.getInputStream().read(buf); n >= 0; n = from.getInputStream().read(buf)) {
                    if (record != null) {
                        synchronized (this) {
                            record.write(buf, 0, n);
                            notifyAll();
                        }
                    }
                    to.getOutputStream().write(buf, 0, n);
                }
                to.shutdownOutput();
            } catch (IOException e) {
                // one side closed or reset: the other follows when the test closes the proxy
            }
        }

        synchronized byte[] awaitClientBytes(int n, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (fromClient.size() < n) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    throw new AssertionError("the rank sent " + fromClient.size() + " of " + n + " bytes through the proxy");
                }
                wait(left);
            }
            return fromClient.toByteArray();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }

    // ------------------------------------------------------------------ ranks that check in wrongly

    @Test
    void wrongRankCountIsRefusedWithInvalidUsage() {
        Job job = new Job();
        job.startAllBut(N - 1);
        TcpBootstrap offender = bootstrap(1, N + 1, BootstrapOptions.builderFrom(Map.of())
                .initTimeout(Duration.ofSeconds(5)).build());
        JmscclppException e = initializeFails(offender, job.id);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        assertTrue(e.detail().contains((N + 1) + " ranks") && e.detail().contains("serves a job of " + N),
                e.getMessage());

        JmscclppException reported = job.ranks.getFirst().rootProblems().blockFirst(DEADLINE);
        assertNotNull(reported);
        assertEquals(ErrorCode.INVALID_USAGE, reported.code());
        assertTrue(reported.detail().contains("says the job has " + (N + 1) + " ranks"), reported.getMessage());

        job.start(N - 1);
        job.completesAndPassesChecks();
        List<JmscclppException> problems = job.rootProblems();
        assertOnlyInvalidUsage(problems);
        assertEquals(1, problems.size(), "the refused rank must not keep checking in: " + problems);
    }

    @Test
    void aRootThatCannotBeReachedIsNamedByTheErrorNotByNull() {
        // connecting to the broadcast address fails with a NoRouteToHostException without a message: the TIMEOUT
        // said "last attempt: null: /255.255.255.255:port"
        BootstrapOptions quick = BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_INSECURE", "1"))
                .initTimeout(Duration.ofSeconds(2)).build();
        JmscclppException e = causeOf(bootstrap(1, 2, quick).initialize("255.255.255.255:29640").toFuture());
        assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        assertTrue(e.detail().contains("(last attempt: "), e.getMessage());
        assertFalse(e.detail().contains("last attempt: null"), e.getMessage());
    }

    @Test
    void theRootsTimeoutNamesTheCheckInItRefused() {
        // rank 1 came with another job size: the root refused it and went on waiting; its TIMEOUT must not
        // say only that rank 1 never checked in
        BootstrapOptions quick = BootstrapOptions.builderFrom(Map.of()).initTimeout(Duration.ofSeconds(3)).build();
        TcpBootstrap rank0 = bootstrap(0, 2, quick);
        UniqueId id = rank0.createUniqueId();
        CompletableFuture<TcpBootstrap> rank0Init = rank0.initialize(id).toFuture();
        JmscclppException offender = initializeFails(bootstrap(1, 3, quick), id);
        assertEquals(ErrorCode.INVALID_USAGE, offender.code(), offender.getMessage());

        JmscclppException e = causeOf(rank0Init);
        assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        assertTrue(e.detail().contains("never checked in: rank 1"), e.getMessage());
        assertTrue(e.detail().contains("1 check-in was refused (the last: rank 1 says the job has 3 ranks, but the "
                + "root serves a job of 2, from /"), e.getMessage());
    }

    @Test
    void duplicateRankIsRefusedWithInvalidUsage() {
        Job job = new Job();
        job.startAllBut(N - 1);
        TcpBootstrap twin = bootstrap(1, N, OPTIONS);
        CompletableFuture<TcpBootstrap> twinInit = twin.initialize(job.id).toFuture();
        CompletableFuture<TcpBootstrap> realInit = job.inits.get(1);
        // Both check in while rank N-1 is missing, so whichever arrives second is refused.
        try {
            CompletableFuture.anyOf(realInit, twinInit).get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
            fail("a rank-1 initialize completed although rank " + (N - 1) + " never started");
        } catch (ExecutionException expected) {
            // one of the two was refused
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError("neither rank-1 bootstrap was refused within " + DEADLINE, e);
        }
        boolean twinRefused = twinInit.isCompletedExceptionally();
        CompletableFuture<TcpBootstrap> refused = twinRefused ? twinInit : realInit;
        JmscclppException e = causeOf(refused);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("rank 1 has already checked in"), e.getMessage());

        JmscclppException reported = job.ranks.getFirst().rootProblems().blockFirst(DEADLINE);
        assertNotNull(reported);
        assertEquals(e.detail(), reported.detail());

        if (twinRefused) {
            job.start(N - 1);
        } else {
            // The twin got there first: it is rank 1 of the job now.
            job.ranks.set(1, twin);
            job.inits.set(1, twinInit);
            job.start(N - 1);
        }
        job.completesAndPassesChecks();
        assertOnlyInvalidUsage(job.rootProblems());
    }

    /** A hand-made check-in (rank, rank count, listen address) the root must refuse with INVALID_USAGE. */
    @ParameterizedTest
    @ValueSource(strings = {"rank=N", "rank=-1", "rank=MAX", "size=0", "size=N+1", "port=0"})
    void handMadeBadCheckInIsRefusedWithInvalidUsage(String bad) throws IOException {
        Job job = new Job();
        job.startAllBut(N - 1);
        int rank = switch (bad) {
            case "rank=N" -> N;
            case "rank=-1" -> -1;
            case "rank=MAX" -> Integer.MAX_VALUE;
            default -> N - 1;
        };
        int size = switch (bad) {
            case "size=0" -> 0;
            case "size=N+1" -> N + 1;
            default -> N;
        };
        byte[] payload = checkInPayload(rank, size, 7,
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 9));
        if (bad.equals("port=0")) {
            // the port is the entry's last field but the core count
            payload[payload.length - 4] = 0;
            payload[payload.length - 3] = 0;
        }
        Socket s = connect(job.wire.root());
        dialRoot(s, WireBytes.rootPreamble(rank, size), job.wire.secret(), job.wire.secret(),
                WireBytes.frame(Frame.CHECK_IN, Frame.LAST, 0, payload));
        JmscclppException e = decodeFailure(readUntilClosed(s));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        String expected = switch (bad) {
            case "port=0" -> "malformed listen address";
            case "size=0", "size=N+1" -> "says the job has " + size + " ranks, but the root serves a job of " + N;
            default -> "rank " + rank + " is outside [0, " + N + ")";
        };
        assertTrue(e.detail().contains(expected), e.getMessage());

        JmscclppException reported = job.ranks.getFirst().rootProblems().blockFirst(DEADLINE);
        assertNotNull(reported);
        assertEquals(e.detail(), reported.detail());

        job.start(N - 1);
        job.completesAndPassesChecks();
        assertOnlyInvalidUsage(job.rootProblems());
    }

    private static JmscclppException initializeFails(TcpBootstrap b, UniqueId id) {
        return causeOf(b.initialize(id).toFuture());
    }

    private static JmscclppException causeOf(CompletableFuture<TcpBootstrap> f) {
        try {
            f.get(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
            throw new AssertionError("initialize succeeded but should have been refused");
        } catch (ExecutionException e) {
            return assertInstanceOf(JmscclppException.class, e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError("initialize neither failed nor succeeded within " + DEADLINE, e);
        }
    }

    private static void assertOnlyInvalidUsage(List<JmscclppException> problems) {
        assertTrue(!problems.isEmpty(), "the root reported nothing");
        for (JmscclppException p : problems) {
            assertEquals(ErrorCode.INVALID_USAGE, p.code(), "the job itself must not fail: " + p.getMessage());
        }
    }

    /** Decodes the one FAILURE frame the root sends after its preamble answer. */
    private static JmscclppException decodeFailure(byte[] bytes) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(BootstrapOptions.MIN_FRAME_BYTES));
        try {
            ch.writeInbound(Unpooled.wrappedBuffer(bytes));
            Frame f = ch.readInbound();
            assertNotNull(f, "the root sent no complete frame after its preamble (" + bytes.length + " bytes)");
            try {
                assertEquals(Frame.FAILURE, f.kind());
                assertTrue(f.last());
                return Failure.decode(f.channel(), f.payload());
            } finally {
                f.release();
            }
        } finally {
            assertArrayEquals(new Object[0], drain(ch), "more than one frame after the preamble");
        }
    }

    private static Object[] drain(EmbeddedChannel ch) {
        List<Object> left = new ArrayList<>();
        for (Object o = ch.readInbound(); o != null; o = ch.readInbound()) {
            left.add(o);
        }
        ch.finishAndReleaseAll();
        left.forEach(o -> ((Frame) o).release());
        return left.toArray();
    }
}
