package org.jmscclpp.cuda;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.LibC;

/**
 * The peer process of {@link DescriptorServerTest}: takes a descriptor from the test's
 * {@link DescriptorServer}, checks what the owner wrote in the file behind it, writes a reply
 * into it, presents a wrong token (refused) and tries {@code pidfd_getfd} on the owner. Arguments:
 * {@code server-name token-hex bytes seed owner-pid owner-fd}. Prints {@code UID}, {@code PIDFD},
 * {@code REFUSED}, {@code FDS} and {@code OK} lines; exits 1 with the failure printed otherwise.
 */
public final class DescriptorTakerMain {

    /** memfd, pread and pwrite: what a test needs to make and read a shareable file without a GPU. */
    public interface Files64 extends Library {
        Files64 INSTANCE = Native.load("c", Files64.class);

        int MFD_CLOEXEC = 1;

        int memfd_create(String name, int flags);

        long pread(int fd, Memory buffer, long count, long offset);

        long pwrite(int fd, Memory buffer, long count, long offset);
    }

    static final String REPLY = "written by the taker";
    /** An index of the token past the grant's id (its first 8 bytes). */
    static final int TOKEN_SECRET_AT = 20;

    private DescriptorTakerMain() {
    }

    public static void main(String[] args) {
        int code = 1;
        try {
            run(args);
            System.out.println("OK");
            code = 0;
        } catch (Throwable t) {
            System.out.println("FAILED " + t);
            t.printStackTrace(System.out);
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    private static void run(String[] args) throws Exception {
        String name = args[0];
        byte[] token = HexFormat.of().parseHex(args[1]);
        int bytes = Integer.parseInt(args[2]);
        int seed = Integer.parseInt(args[3]);
        int ownerPid = Integer.parseInt(args[4]);
        int ownerFd = Integer.parseInt(args[5]);
        System.out.println("UID " + OtherUser.currentUid());
        byte[] wrong = token.clone();
        wrong[TOKEN_SECRET_AT] ^= 1;   // the grant's id, another secret: refused all the same
        refused(name, wrong, ownerPid);   // first, so that every class is loaded before the count
        pidfd(ownerPid, ownerFd);
        long before = openDescriptors();

        int fd = DescriptorServer.take(name, token, Duration.ofSeconds(10), "pid " + ownerPid);
        try {
            byte[] seen = read(fd, bytes);
            byte[] expected = pattern(bytes, seed);
            if (!java.util.Arrays.equals(seen, expected)) {
                throw new AssertionError("the descriptor taken shows other bytes than the owner wrote");
            }
            write(fd, REPLY.getBytes(StandardCharsets.US_ASCII));
        } finally {
            LibC.INSTANCE.close(fd);
        }

        System.out.println("REFUSED " + refused(name, wrong, ownerPid).getMessage());
        System.out.println("PIDFD " + pidfd(ownerPid, ownerFd));
        System.out.println("FDS " + before + " " + openDescriptors());
    }

    /** What pidfd_getfd says about the owner's descriptor: {@code allowed}, or {@code refused <message>}. */
    private static String pidfd(int ownerPid, int ownerFd) {
        try {
            LibC.INSTANCE.close(CudaBackend.takeDescriptorByPidfd(ownerPid, ownerFd));
            return "allowed";
        } catch (JmscclppException e) {
            return "refused " + e.getMessage();
        }
    }

    private static JmscclppException refused(String name, byte[] wrong, int ownerPid) throws Exception {
        try {
            int stolen = DescriptorServer.take(name, wrong, Duration.ofSeconds(10), "pid " + ownerPid);
            LibC.INSTANCE.close(stolen);
            throw new AssertionError("a wrong token was given a descriptor");
        } catch (JmscclppException e) {
            if (e.code() != ErrorCode.INVALID_USAGE) {
                throw e;
            }
            return e;
        }
    }

    static byte[] pattern(int bytes, int seed) {
        byte[] out = new byte[bytes];
        for (int i = 0; i < bytes; i++) {
            out[i] = (byte) (i * 31 + seed);
        }
        return out;
    }

    static byte[] read(int fd, int bytes) {
        try (Memory m = new Memory(bytes)) {
            long n = Files64.INSTANCE.pread(fd, m, bytes, 0);
            if (n != bytes) {
                throw new AssertionError("pread gave " + n + " of " + bytes + " bytes, " + LibC.describe(Native.getLastError()));
            }
            return m.getByteArray(0, bytes);
        }
    }

    static void write(int fd, byte[] bytes) {
        try (Memory m = new Memory(bytes.length)) {
            m.write(0, bytes, 0, bytes.length);
            long n = Files64.INSTANCE.pwrite(fd, m, bytes.length, 0);
            if (n != bytes.length) {
                throw new AssertionError("pwrite wrote " + n + " of " + bytes.length + " bytes");
            }
        }
    }

    /** Entries of {@code /proc/self/fd}. */
    static long openDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
