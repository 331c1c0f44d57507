package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Memory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.nativebridge.LibC;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DescriptorServer}, the SCM_RIGHTS path of VMM buffers' descriptors, on memfd files (no
 * GPU needed): another process takes a descriptor and sees the owner's bytes, also as another
 * user that {@code pidfd_getfd} refuses; wrong, withdrawn and unanswered requests are typed
 * errors; nothing leaks a descriptor ({@code /proc/self/fd}) and the server's thread ends on close.
 */
class DescriptorServerTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final int BYTES = 64 << 10;
    private static final SecureRandom RANDOM = new SecureRandom();

    @TempDir
    Path logs;

    @BeforeAll
    static void loadEveryClassBeforeCountingDescriptors() throws Exception {
        int file = memfd("warm-up", 16, 1);
        try (DescriptorServer server = DescriptorServer.start("warm-up")) {
            DescriptorServer.Grant grant = server.grant(file);
            LibC.INSTANCE.close(DescriptorServer.take(server.name(), grant.token(), TIMEOUT, "this test"));
            assertThrows(JmscclppException.class,
                    () -> DescriptorServer.take(server.name(), randomToken(), TIMEOUT, "this test"));
        } finally {
            LibC.INSTANCE.close(file);
        }
    }

    @Test
    void anotherProcessTakesTheGrantedMemfdAndSharesItsBytes() throws Exception {
        long before = DescriptorTakerMain.openDescriptors();
        int file = memfd("granted", BYTES, 7);
        int other = memfd("not granted", BYTES, 99);
        DescriptorServer server = DescriptorServer.start("the test JVM");
        try {
            DescriptorServer.Grant grant = server.grant(file);
            server.grant(other);
            Path log = logs.resolve("taker.log");
            ChildJvm child = ChildJvm.start(log, DescriptorTakerMain.class, takerArgs(server, grant, file, 7));
            List<String> lines;
            try (child) {
                lines = runTaker(child.process(), log);
            }
            assertTrue(lines.get(0).startsWith("REFUSED INVALID_USAGE"), lines.get(0));
            assertTrue(lines.get(0).contains("refused the token"), lines.get(0));
            // the taker's reply is in the owner's file: one file, two processes
            byte[] head = DescriptorTakerMain.read(file, DescriptorTakerMain.REPLY.length());
            assertEquals(DescriptorTakerMain.REPLY, new String(head, StandardCharsets.US_ASCII));
            byte[] untouched = DescriptorTakerMain.read(other, BYTES);
            assertArrayEquals(DescriptorTakerMain.pattern(BYTES, 99), untouched, "the other grant's file changed");
        } finally {
            server.close();
            LibC.INSTANCE.close(file);
            LibC.INSTANCE.close(other);
        }
        assertFalse(server.isServing(), "the server's thread still runs after close");
        assertEquals(0, server.grantCount());
        assertDescriptors(before, "descriptors of this process leaked");
    }

    @Test
    void aUserWithoutPtraceRightsOverTheOwnerStillTakesTheDescriptor() throws Exception {
        OtherUser.unavailableReason().ifPresent(reason -> Assumptions.abort(reason));
        int uid = 61_001;
        int file = memfd("for another user", BYTES, 3);
        try (DescriptorServer server = DescriptorServer.start("the test JVM (root)");
             OtherUser users = OtherUser.in(uid)) {
            DescriptorServer.Grant grant = server.grant(file);
            Path log = logs.resolve("other-user.log");
            ProcessBuilder pb = users.processBuilder(uid, List.of("--enable-native-access=ALL-UNNAMED",
                    "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m"), DescriptorTakerMain.class,
                    List.of(takerArgs(server, grant, file, 3))).redirectErrorStream(true).redirectOutput(log.toFile());
            Process process = pb.start();
            try {
                List<String> lines = runTaker(process, log);
                assertEquals(List.of(Integer.toString(uid)), linesStartingWith(log, "UID "));
                String pidfd = linesStartingWith(log, "PIDFD ").get(0);
                assertTrue(pidfd.startsWith("refused SYSTEM_ERROR") && pidfd.contains("errno 1 "),
                        "pidfd_getfd from uid " + uid + " on root's process: " + pidfd);
                assertTrue(lines.get(0).startsWith("REFUSED INVALID_USAGE"), lines.get(0));
            } finally {
                process.destroyForcibly();
            }
            byte[] head = DescriptorTakerMain.read(file, DescriptorTakerMain.REPLY.length());
            assertEquals(DescriptorTakerMain.REPLY, new String(head, StandardCharsets.US_ASCII));
        } finally {
            LibC.INSTANCE.close(file);
        }
    }

    @Test
    void aWrongTokenIsRefusedAsInvalidUsageAndTheRightOneStillWorks() throws Exception {
        int file = memfd("guarded", 4096, 5);
        long before = DescriptorTakerMain.openDescriptors();
        try (DescriptorServer server = DescriptorServer.start("the test JVM")) {
            DescriptorServer.Grant grant = server.grant(file);
            byte[] sameIdOtherSecret = grant.token();
            sameIdOtherSecret[DescriptorServer.TOKEN_BYTES - 1] ^= (byte) 0x80;
            for (byte[] wrong : new byte[][] {sameIdOtherSecret, randomToken()}) {
                JmscclppException e = assertThrows(JmscclppException.class,
                        () -> DescriptorServer.take(server.name(), wrong, TIMEOUT, "pid 1 (this test)"));
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
                assertTrue(e.getMessage().contains("@" + server.name()) && e.getMessage().contains("pid 1 (this test)"),
                        e::getMessage);
            }
            int copy = DescriptorServer.take(server.name(), grant.token(), TIMEOUT, "this test");
            try {
                assertArrayEquals(DescriptorTakerMain.pattern(4096, 5), DescriptorTakerMain.read(copy, 4096));
            } finally {
                LibC.INSTANCE.close(copy);
            }
        } finally {
            LibC.INSTANCE.close(file);
        }
        assertDescriptors(before - 1, "descriptors leaked");
    }

    @Test
    void aWithdrawnGrantIsRefused() throws Exception {
        int file = memfd("withdrawn", 4096, 5);
        try (DescriptorServer server = DescriptorServer.start("the test JVM")) {
            DescriptorServer.Grant grant = server.grant(file);
            grant.close();
            grant.close();
            assertEquals(0, server.grantCount());
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> DescriptorServer.take(server.name(), grant.token(), TIMEOUT, "this test"));
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
        } finally {
            LibC.INSTANCE.close(file);
        }
    }

    @Test
    void aClosedServerIsUnreachableItsThreadEndsAndItGrantsNoMore() throws Exception {
        long before = DescriptorTakerMain.openDescriptors();
        DescriptorServer server = DescriptorServer.start("the test JVM");
        assertTrue(server.isServing());
        server.close();
        server.close();
        assertFalse(server.isServing());
        assertEquals(before, DescriptorTakerMain.openDescriptors(), "the server's sockets stay open");
        assertThrows(DescriptorServer.Unreachable.class,
                () -> DescriptorServer.take(server.name(), randomToken(), TIMEOUT, "this test"));
        JmscclppException e = assertThrows(JmscclppException.class, () -> server.grant(0));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals(before, DescriptorTakerMain.openDescriptors(), "a failed take leaked its socket");
    }

    @Test
    void aServerThatNeverAnswersIsATimeoutWithinItsDeadline() throws Exception {
        String name = "jmscclpp-test-silent-" + HexFormat.of().formatHex(randomToken(), 0, 8);
        int silent = LibC.INSTANCE.socket(LibC.AF_UNIX, LibC.SOCK_STREAM | LibC.SOCK_CLOEXEC, 0);
        try (Memory address = new Memory(LibC.SOCKADDR_UN_BYTES)) {
            address.clear();
            address.setShort(0, (short) LibC.AF_UNIX);
            byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
            address.write(3, bytes, 0, bytes.length);
            assertEquals(0, LibC.INSTANCE.bind(silent, address, 3 + bytes.length));
            assertEquals(0, LibC.INSTANCE.listen(silent, 4));   // accepts into the backlog, never answers
            long before = DescriptorTakerMain.openDescriptors();
            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> DescriptorServer.take(name, randomToken(), Duration.ofMillis(300), "a silent peer"));
            long tookMillis = (System.nanoTime() - start) / 1_000_000;
            assertEquals(ErrorCode.TIMEOUT, e.code(), e::getMessage);
            assertTrue(tookMillis < 3_000, "the take waited " + tookMillis + " ms for a 300 ms deadline");
            assertEquals(before, DescriptorTakerMain.openDescriptors(), "a timed-out take leaked its socket");
        } finally {
            LibC.INSTANCE.close(silent);
        }
    }

    @Test
    void manyTakesAndRefusalsLeakNoDescriptor() throws Exception {
        int file = memfd("many", 4096, 9);
        // counted with no server running: the server closes each client's socket just after answering
        long before = DescriptorTakerMain.openDescriptors();
        try (DescriptorServer server = DescriptorServer.start("the test JVM")) {
            DescriptorServer.Grant grant = server.grant(file);
            for (int i = 0; i < 200; i++) {
                LibC.INSTANCE.close(DescriptorServer.take(server.name(), grant.token(), TIMEOUT, "this test"));
                assertThrows(JmscclppException.class,
                        () -> DescriptorServer.take(server.name(), randomToken(), TIMEOUT, "this test"));
            }
        } finally {
            LibC.INSTANCE.close(file);
        }
        assertEquals(before - 1, DescriptorTakerMain.openDescriptors());
    }

    @Test
    void theBackendFallsBackToPidfdGetfdOnlyWhereTheServerIsUnreachableAndNamesBothWhenBothFail() {
        int file = memfd("fallback", 4096, 11);
        try {
            int pid = (int) ProcessHandle.current().pid();
            String nobody = "jmscclpp-test-nobody-" + HexFormat.of().formatHex(randomToken(), 0, 8);
            // a process may always take its own descriptors: the fallback works
            int copy = CudaBackend.takeDescriptor(CudaIpcHandle.posixFd(4096, pid, file, randomToken(), nobody));
            try {
                assertArrayEquals(DescriptorTakerMain.pattern(4096, 11), DescriptorTakerMain.read(copy, 4096));
            } finally {
                LibC.INSTANCE.close(copy);
            }
            // descriptor 999999 does not exist: both ways fail, and the message says what each said
            JmscclppException e = assertThrows(JmscclppException.class, () -> CudaBackend.takeDescriptor(
                    CudaIpcHandle.posixFd(4096, pid, 999_999, randomToken(), nobody)));
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertTrue(e.getMessage().contains("SCM_RIGHTS") && e.getMessage().contains("@" + nobody)
                    && e.getMessage().contains("pidfd_getfd"), e::getMessage);
        } finally {
            LibC.INSTANCE.close(file);
        }
    }

    /** Waits for a taker, checks its success and descriptor counts, prints its output, returns its REFUSED lines. */
    private static List<String> runTaker(Process process, Path log) throws Exception {
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the taker did not end within 60 s:\n" + Files.readString(log));
        }
        String output = Files.readString(log);
        System.out.print(output);
        assertEquals(0, process.exitValue(), output);
        List<String> fds = linesStartingWith(log, "FDS ");
        assertEquals(1, fds.size(), output);
        String[] counts = fds.get(0).split(" ");
        assertEquals(counts[0], counts[1], "the taker's descriptors before and after: " + fds.get(0));
        return linesStartingWith(log, "REFUSED ").stream().map(l -> "REFUSED " + l).toList();
    }

    private static List<String> linesStartingWith(Path log, String prefix) throws Exception {
        return Files.readAllLines(log).stream().filter(l -> l.startsWith(prefix))
                .map(l -> l.substring(prefix.length()).strip()).toList();
    }

    private static String[] takerArgs(DescriptorServer server, DescriptorServer.Grant grant, int file, int seed) {
        return new String[] {server.name(), HexFormat.of().formatHex(grant.token()), Integer.toString(BYTES),
                Integer.toString(seed), Long.toString(ProcessHandle.current().pid()), Integer.toString(file)};
    }

    /** A memfd of {@code bytes} bytes holding {@link DescriptorTakerMain#pattern}. */
    private static int memfd(String name, int bytes, int seed) {
        int fd = DescriptorTakerMain.Files64.INSTANCE.memfd_create(name, DescriptorTakerMain.Files64.MFD_CLOEXEC);
        assertTrue(fd >= 0, "memfd_create failed");
        DescriptorTakerMain.write(fd, DescriptorTakerMain.pattern(bytes, seed));
        return fd;
    }

    private static byte[] randomToken() {
        byte[] token = new byte[DescriptorServer.TOKEN_BYTES];
        RANDOM.nextBytes(token);
        return token;
    }

    /**
     * This process's descriptor count comes back to {@code want} within 10 s: after a child process
     * ends, the JDK's reaper thread closes its pipes on its own time; a descriptor that stays open
     * past that is a leak.
     */
    private static void assertDescriptors(long want, String what) {
        Waiting.await(() -> DescriptorTakerMain.openDescriptors() == want, Waiting.deadline(Duration.ofSeconds(10)));
        assertEquals(want, DescriptorTakerMain.openDescriptors(), what);
    }
}
