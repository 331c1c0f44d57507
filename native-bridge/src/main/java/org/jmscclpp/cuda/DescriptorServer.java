package org.jmscclpp.cuda;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.nativebridge.LibC;

/**
 * Hands file descriptors of this process to other processes of the host over a Unix domain socket
 * with {@code SCM_RIGHTS}, as MSCCL++ passes its VMM buffers' descriptors: no ptrace right over
 * this process is needed, unlike {@code pidfd_getfd}, so it works between sibling processes under
 * {@code ptrace_scope=1}, between different users and under Docker's default seccomp profile.
 *
 * <h2>Access</h2>
 * The socket is bound in the abstract namespace ({@code @jmscclpp-fd-<pid>-<random>}): it has no
 * file and no permissions, so a process of any user in the same network namespace can connect,
 * which lets ranks running as different users share buffers. What guards a descriptor is the
 * {@link Grant}: {@link #grant} files one descriptor under a random 256-bit token, the owner sends
 * the token (inside a serialized {@code RegisteredMemory}) to the peer it shares the buffer with,
 * and the server hands out the descriptor to a client that presents that token and to no one
 * else; tokens are compared in constant time. A client gets the descriptor of the grant it names,
 * never another. {@link Grant#close()} withdraws a grant; the caller withdraws it before it closes
 * the descriptor, and the server sends under the same lock, so a descriptor number is never sent
 * after it was closed (and maybe reused).
 *
 * <h2>Wire (little-endian, one request per connection)</h2>
 * <pre>
 *  request, 40 bytes: magic 0x44464D4A ("JMFD"), version 1, 3 zero bytes, token (32 bytes)
 *  answer,   8 bytes: magic, status (0 granted: one descriptor rides along as SCM_RIGHTS;
 *                     1 refused: no grant has this token; 2 malformed request), 3 zero bytes
 * </pre>
 *
 * <h2>Threads and deadlines</h2>
 * One platform thread per server (blocking native calls stay off virtual threads) waits in
 * {@code poll} for a client or for the wake-up {@link #close()} sends through an {@code eventfd};
 * it answers one client at a time and gives each {@value #CLIENT_TIMEOUT_MS} ms to send its
 * request ({@code SO_RCVTIMEO}). {@link #take} waits at most its timeout for the connection, the
 * request and the answer. Every descriptor and socket is closed on every path.
 */
final class DescriptorServer implements AutoCloseable {

    static final int TOKEN_BYTES = 32;
    static final int REQUEST_BYTES = 8 + TOKEN_BYTES;
    static final int ANSWER_BYTES = 8;
    static final int MAGIC = 0x44464D4A;
    static final int VERSION = 1;
    static final byte GRANTED = 0;
    static final byte REFUSED = 1;
    static final byte MALFORMED = 2;
    /** The longest abstract name {@link #take} accepts (the address holds 107 bytes after its NUL). */
    static final int MAX_NAME_BYTES = 100;
    static final long CLIENT_TIMEOUT_MS = 5_000;

    /** Descriptors a client takes from one answer at most: room to see, and close, any extra a server sends. */
    private static final int MAX_FDS = 8;
    private static final int CONTROL_BYTES = LibC.CMSGHDR_BYTES + MAX_FDS * Integer.BYTES;
    private static final String PHASE = "importMemory";
    private static final System.Logger LOG = Log.logger(DescriptorServer.class, Subsystem.P2P);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String name;
    private final String owner;
    private final int listenFd;
    private final int wakeFd;
    private final Thread thread;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Grants by the first 8 bytes of their token; the server sends a descriptor while holding this lock. */
    private final Map<Long, Grant> grants = new HashMap<>();

    private DescriptorServer(String name, String owner, int listenFd, int wakeFd) {
        this.name = name;
        this.owner = owner;
        this.listenFd = listenFd;
        this.wakeFd = wakeFd;
        this.thread = Thread.ofPlatform().daemon().name("jmscclpp-fd-server " + name).unstarted(this::serve);
    }

    /**
     * A server listening on a fresh abstract name, its thread started.
     *
     * @param owner who it serves, for messages (such as {@code "GPU 0 of pid 4242"})
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the system refuses a socket
     */
    static DescriptorServer start(String owner) {
        checkPlatform();
        int wake = LibC.INSTANCE.eventfd(0, LibC.EFD_CLOEXEC);
        if (wake < 0) {
            throw system("eventfd for the descriptor server of " + owner + " failed with " + lastError());
        }
        int fd = -1;
        try {
            fd = LibC.INSTANCE.socket(LibC.AF_UNIX, LibC.SOCK_STREAM | LibC.SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw system("socket(AF_UNIX) for the descriptor server of " + owner + " failed with " + lastError());
            }
            String name = null;
            for (int attempt = 0; attempt < 4 && name == null; attempt++) {
                byte[] random = new byte[8];
                RANDOM.nextBytes(random);
                String candidate = "jmscclpp-fd-" + ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(random);
                Memory address = abstractAddress(candidate);
                if (LibC.INSTANCE.bind(fd, address, addressLength(candidate)) == 0) {
                    name = candidate;
                } else if (attempt == 3) {
                    throw system("bind(@" + candidate + ") for the descriptor server of " + owner + " failed with "
                            + lastError());
                }
            }
            if (LibC.INSTANCE.listen(fd, 64) != 0) {
                throw system("listen(@" + name + ") failed with " + lastError());
            }
            DescriptorServer server = new DescriptorServer(name, owner, fd, wake);
            server.thread.start();
            return server;
        } catch (RuntimeException e) {
            if (fd >= 0) {
                LibC.INSTANCE.close(fd);
            }
            LibC.INSTANCE.close(wake);
            throw e;
        }
    }

    /** The abstract socket name, without its leading NUL: what a peer passes to {@link #take}. */
    String name() {
        return name;
    }

    /**
     * Files {@code fd} under a fresh random token: from now on a client presenting the token gets a
     * copy of the descriptor, until the grant is {@linkplain Grant#close() withdrawn}. The grant
     * does not own {@code fd}; its owner withdraws the grant before it closes the descriptor.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the server is closed
     */
    Grant grant(int fd) {
        synchronized (grants) {
            if (closed.get()) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the descriptor server @" + name + " of "
                        + owner + " is closed").phase("exportMemory").build();
            }
            while (true) {
                byte[] token = new byte[TOKEN_BYTES];
                RANDOM.nextBytes(token);
                long id = idOf(token);
                if (!grants.containsKey(id)) {
                    Grant g = new Grant(id, token, fd);
                    grants.put(id, g);
                    return g;
                }
            }
        }
    }

    /** Grants not withdrawn, for tests. */
    int grantCount() {
        synchronized (grants) {
            return grants.size();
        }
    }

    /** Whether the server's thread still runs, for tests. */
    boolean isServing() {
        return thread.isAlive();
    }

    /**
     * Stops the server: wakes its thread, waits for it (at most the time one client is given, plus a
     * second) and closes its sockets; grants are forgotten. The descriptors granted stay their
     * owners'. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        synchronized (grants) {
            grants.clear();
        }
        try (Memory one = new Memory(8)) {
            one.setLong(0, 1);
            LibC.INSTANCE.write(wakeFd, one, 8);
        }
        boolean ended;
        try {
            ended = thread.join(Duration.ofMillis(CLIENT_TIMEOUT_MS + 1_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ended = !thread.isAlive();
        }
        if (ended) {
            LibC.INSTANCE.close(listenFd);
            LibC.INSTANCE.close(wakeFd);
        } else {
            // closing a descriptor a live thread still uses could hand its number to another file
            LOG.log(Level.WARNING, "the descriptor server @" + name + " of " + owner + " did not stop within "
                    + (CLIENT_TIMEOUT_MS + 1_000) + " ms; its two sockets are left open");
        }
    }

    @Override
    public String toString() {
        return "DescriptorServer[@" + name + ", " + owner + (closed.get() ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------------------------------------
    // server side

    private void serve() {
        try (Memory polls = new Memory(2L * LibC.POLLFD_BYTES)) {
            polls.clear();
            polls.setInt(0, listenFd);
            polls.setShort(4, (short) LibC.POLLIN);
            polls.setInt(LibC.POLLFD_BYTES, wakeFd);
            polls.setShort(LibC.POLLFD_BYTES + 4, (short) LibC.POLLIN);
            while (!closed.get()) {
                polls.setShort(6, (short) 0);
                polls.setShort(LibC.POLLFD_BYTES + 6, (short) 0);
                // no deadline: this waits for clients for the server's lifetime, and close() wakes it
                int ready = LibC.INSTANCE.poll(polls, 2, -1);
                if (ready < 0) {
                    int errno = Native.getLastError();
                    if (errno == LibC.EINTR) {
                        continue;
                    }
                    LOG.log(Level.ERROR, "the descriptor server @" + name + " of " + owner + " stops: poll failed with "
                            + LibC.describe(errno));
                    return;
                }
                if (closed.get() || polls.getShort(LibC.POLLFD_BYTES + 6) != 0) {
                    return;
                }
                short events = polls.getShort(6);
                if ((events & LibC.POLLIN) == 0) {
                    LOG.log(Level.ERROR, "the descriptor server @" + name + " of " + owner + " stops: its socket reports events 0x"
                            + Integer.toHexString(events));
                    return;
                }
                int client = LibC.INSTANCE.accept4(listenFd, null, null, LibC.SOCK_CLOEXEC);
                if (client < 0) {
                    int errno = Native.getLastError();
                    if (errno == LibC.EINTR || errno == LibC.EAGAIN || errno == LibC.ECONNABORTED) {
                        continue;   // the client gave up in between: wait again
                    }
                    // out of descriptors, say: the connection stays queued and poll would spin
                    LOG.log(Level.ERROR, "the descriptor server @" + name + " of " + owner + " stops: accept failed with "
                            + LibC.describe(errno) + "; peers' imports from it will time out");
                    return;
                }
                try {
                    answer(client);
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "the descriptor server @" + name + " of " + owner + " dropped a client: " + e);
                } finally {
                    LibC.INSTANCE.close(client);
                }
            }
        }
    }

    private void answer(int client) {
        setTimeouts(client, CLIENT_TIMEOUT_MS);
        byte[] request = new byte[REQUEST_BYTES];
        int got = readFully(client, request);
        if (got < REQUEST_BYTES) {
            LOG.log(Level.WARNING, "the descriptor server @" + name + " of " + owner + " got " + got + " of " + REQUEST_BYTES
                    + " request bytes from " + peerOf(client) + " (" + (got < 0 ? "timed out or failed" : "closed")
                    + ")");
            return;
        }
        ByteBuffer in = ByteBuffer.wrap(request).order(ByteOrder.LITTLE_ENDIAN);
        int magic = in.getInt();
        int version = in.get();
        boolean zero = in.get() == 0 && in.getShort() == 0;
        if (magic != MAGIC || version != VERSION || !zero) {
            LOG.log(Level.WARNING, "the descriptor server @" + name + " of " + owner + " got a malformed request from "
                    + peerOf(client));
            send(client, MALFORMED, -1);
            return;
        }
        byte[] token = new byte[TOKEN_BYTES];
        in.get(token);
        synchronized (grants) {
            Grant g = grants.get(idOf(token));
            if (g != null && MessageDigest.isEqual(g.token, token)) {
                send(client, GRANTED, g.fd);
                return;
            }
        }
        LOG.log(Level.WARNING, "the descriptor server @" + name + " of " + owner + " refused " + peerOf(client)
                + ": its token names no grant (withdrawn, or never made)");
        send(client, REFUSED, -1);
    }

    /** The answer, with {@code fd} as SCM_RIGHTS when {@code fd >= 0}; never blocks (8 bytes fit any socket). */
    private static void send(int client, byte status, int fd) {
        try (Memory data = new Memory(ANSWER_BYTES); Memory iov = new Memory(LibC.IOVEC_BYTES);
             Memory message = new Memory(LibC.MSGHDR_BYTES);
             Memory control = new Memory(LibC.CMSGHDR_BYTES + 8)) {
            data.setInt(0, MAGIC);
            data.setByte(4, status);
            data.setByte(5, (byte) 0);
            data.setShort(6, (short) 0);
            iov.setPointer(0, data);
            iov.setLong(8, ANSWER_BYTES);
            message.clear();
            message.setPointer(16, iov);
            message.setLong(24, 1);
            if (fd >= 0) {
                control.clear();
                control.setLong(0, LibC.CMSGHDR_BYTES + Integer.BYTES);   // CMSG_LEN(sizeof(int))
                control.setInt(8, LibC.SOL_SOCKET);
                control.setInt(12, LibC.SCM_RIGHTS);
                control.setInt(16, fd);
                message.setPointer(32, control);
                message.setLong(40, control.size());                         // CMSG_SPACE(sizeof(int))
            }
            long sent = LibC.INSTANCE.sendmsg(client, message, LibC.MSG_NOSIGNAL | LibC.MSG_DONTWAIT);
            if (sent != ANSWER_BYTES) {
                throw system("sendmsg of an answer sent " + sent + " bytes"
                        + (sent < 0 ? ", " + lastError() : ""));
            }
        }
    }

    private static String peerOf(int client) {
        try (Memory cred = new Memory(LibC.UCRED_BYTES); Memory length = new Memory(4)) {
            length.setInt(0, LibC.UCRED_BYTES);
            if (LibC.INSTANCE.getsockopt(client, LibC.SOL_SOCKET, LibC.SO_PEERCRED, cred, length) != 0) {
                return "a client (" + lastError() + " on SO_PEERCRED)";
            }
            return "pid " + cred.getInt(0) + " (uid " + cred.getInt(4) + ")";
        }
    }

    // ---------------------------------------------------------------------------------------------
    // client side

    /** Nothing listens at the name (the server is gone, or in another network namespace): the caller may try another way. */
    static final class Unreachable extends Exception {
        private static final long serialVersionUID = 1L;

        Unreachable(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Takes a copy of the descriptor granted under {@code token} from the server at abstract name
     * {@code name}: connects, sends the token, and returns the descriptor that comes with the
     * answer (close-on-exec; the caller closes it). At most {@code timeout} in all.
     *
     * @param exporter who runs the server, for messages (such as {@code "pid 4242"})
     * @throws Unreachable when nothing listens at {@code name}
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the server refuses the token
     *                           (the buffer was closed, or the token is not one it granted) or
     *                           does not read the request; {@link ErrorCode#TIMEOUT} past
     *                           {@code timeout}; {@link ErrorCode#REMOTE_ERROR} when the server
     *                           hangs up or answers nonsense; {@link ErrorCode#SYSTEM_ERROR} when
     *                           this process cannot make a socket
     */
    static int take(String name, byte[] token, Duration timeout, String exporter) throws Unreachable {
        checkPlatform();
        if (token.length != TOKEN_BYTES) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a descriptor token has " + TOKEN_BYTES
                    + " bytes, not " + token.length).phase(PHASE).build();
        }
        String who = "the descriptor server @" + name + " of " + exporter;
        long deadline = Waiting.deadline(timeout);
        int fd = LibC.INSTANCE.socket(LibC.AF_UNIX, LibC.SOCK_STREAM | LibC.SOCK_CLOEXEC, 0);
        if (fd < 0) {
            throw system("socket(AF_UNIX) to reach " + who + " failed with " + lastError());
        }
        try {
            setTimeouts(fd, leftMillis(deadline, timeout, who, "connecting"));
            if (LibC.INSTANCE.connect(fd, abstractAddress(name), addressLength(name)) != 0) {
                int errno = Native.getLastError();
                if (errno == LibC.EAGAIN) {
                    throw timeout(who, timeout, "connecting (its backlog stayed full)");
                }
                throw new Unreachable("connect(@" + name + ") failed with " + LibC.describe(errno));
            }
            byte[] request = ByteBuffer.allocate(REQUEST_BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(MAGIC)
                    .put((byte) VERSION).put((byte) 0).putShort((short) 0).put(token).array();
            writeFully(fd, request, deadline, timeout, who);
            return receiveAnswer(fd, deadline, timeout, who);
        } finally {
            LibC.INSTANCE.close(fd);
        }
    }

    private static void writeFully(int fd, byte[] bytes, long deadline, Duration timeout, String who) {
        try (Memory buffer = new Memory(bytes.length)) {
            buffer.write(0, bytes, 0, bytes.length);
            int done = 0;
            while (done < bytes.length) {
                setTimeouts(fd, leftMillis(deadline, timeout, who, "sending the request"));
                long n = LibC.INSTANCE.write(fd, buffer.share(done), bytes.length - done);
                if (n < 0) {
                    int errno = Native.getLastError();
                    if (errno == LibC.EINTR) {
                        continue;
                    }
                    if (errno == LibC.EAGAIN) {
                        throw timeout(who, timeout, "sending the request");
                    }
                    throw remote(who + " hung up while this process sent its request: " + LibC.describe(errno));
                }
                done += (int) n;
            }
        }
    }

    /** Reads the 8-byte answer and the descriptors that come with it; returns the one descriptor of a grant. */
    private static int receiveAnswer(int fd, long deadline, Duration timeout, String who) {
        List<Integer> fds = new ArrayList<>();
        boolean truncated = false;
        int got = 0;
        try (Memory data = new Memory(ANSWER_BYTES); Memory iov = new Memory(LibC.IOVEC_BYTES);
             Memory message = new Memory(LibC.MSGHDR_BYTES); Memory control = new Memory(CONTROL_BYTES)) {
            while (got < ANSWER_BYTES) {
                setTimeouts(fd, leftMillis(deadline, timeout, who, "waiting for the answer"));
                iov.setPointer(0, data.share(got));
                iov.setLong(8, ANSWER_BYTES - got);
                message.clear();
                message.setPointer(16, iov);
                message.setLong(24, 1);
                control.clear();
                message.setPointer(32, control);
                message.setLong(40, CONTROL_BYTES);
                long n = LibC.INSTANCE.recvmsg(fd, message, LibC.MSG_CMSG_CLOEXEC);
                if (n < 0) {
                    int errno = Native.getLastError();
                    if (errno == LibC.EINTR) {
                        continue;
                    }
                    closeAll(fds);
                    if (errno == LibC.EAGAIN) {
                        throw timeout(who, timeout, "waiting for the answer");
                    }
                    throw remote(who + " failed while this process waited for the answer: " + LibC.describe(errno));
                }
                collectDescriptors(control, message.getLong(40), fds);
                truncated |= (message.getInt(48) & LibC.MSG_CTRUNC) != 0;
                if (n == 0) {
                    closeAll(fds);
                    throw remote(who + " closed the connection after " + got + " of " + ANSWER_BYTES
                            + " answer bytes");
                }
                got += (int) n;
            }
            ByteBuffer in = data.getByteBuffer(0, ANSWER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            int magic = in.getInt();
            byte status = in.get();
            if (magic != MAGIC || truncated || (status == GRANTED) != (fds.size() == 1)
                    || (status != GRANTED && status != REFUSED && status != MALFORMED)) {
                closeAll(fds);
                throw remote(who + " answered nonsense: magic 0x" + Integer.toHexString(magic) + ", status " + status
                        + ", " + (truncated ? "more than " + MAX_FDS : Integer.toString(fds.size()))
                        + " descriptor(s)");
            }
            if (status == REFUSED) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, who + " refused the token: it grants no "
                        + "buffer under it (the buffer was closed, or the token is not one it gave out)")
                        .phase(PHASE).build();
            }
            if (status == MALFORMED) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, who + " could not read the request (a "
                        + "peer of another jmscclpp version?)").phase(PHASE).build();
            }
            return fds.get(0);
        }
    }

    /** Adds the SCM_RIGHTS descriptors of the first {@code length} bytes of control messages to {@code fds}. */
    private static void collectDescriptors(Memory control, long length, List<Integer> fds) {
        long at = 0;
        while (at + LibC.CMSGHDR_BYTES <= length) {
            long len = control.getLong(at);
            if (len < LibC.CMSGHDR_BYTES || at + len > length) {
                return;
            }
            if (control.getInt(at + 8) == LibC.SOL_SOCKET && control.getInt(at + 12) == LibC.SCM_RIGHTS) {
                long count = (len - LibC.CMSGHDR_BYTES) / Integer.BYTES;
                for (long i = 0; i < count; i++) {
                    fds.add(control.getInt(at + LibC.CMSGHDR_BYTES + i * Integer.BYTES));
                }
            }
            at += (len + 7) & ~7L;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // helpers

    private static long idOf(byte[] token) {
        return ByteBuffer.wrap(token, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private static Memory abstractAddress(String name) {
        byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
        if (bytes.length == 0 || bytes.length > MAX_NAME_BYTES) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "an abstract socket name has 1 to "
                    + MAX_NAME_BYTES + " bytes, not " + bytes.length).phase(PHASE).build();
        }
        Memory address = new Memory(LibC.SOCKADDR_UN_BYTES);
        address.clear();
        address.setShort(0, (short) LibC.AF_UNIX);
        address.write(3, bytes, 0, bytes.length);   // sun_path[0] stays NUL: the abstract namespace
        return address;
    }

    /** The address length of an abstract name: the family, the NUL, the name (no terminator). */
    private static int addressLength(String name) {
        return 2 + 1 + name.getBytes(StandardCharsets.US_ASCII).length;
    }

    /** Bytes read into {@code into} until it is full, the peer closes (fewer) or a read fails or times out (-1). */
    private static int readFully(int fd, byte[] into) {
        try (Memory buffer = new Memory(into.length)) {
            int done = 0;
            while (done < into.length) {
                long n = LibC.INSTANCE.read(fd, buffer.share(done), into.length - done);
                if (n < 0 && Native.getLastError() == LibC.EINTR) {
                    continue;
                }
                if (n < 0) {
                    return -1;
                }
                if (n == 0) {
                    break;
                }
                done += (int) n;
            }
            buffer.read(0, into, 0, done);
            return done;
        }
    }

    /** {@code SO_RCVTIMEO} and {@code SO_SNDTIMEO} (which also bounds a Unix socket's connect) of {@code millis} &gt; 0. */
    private static void setTimeouts(int fd, long millis) {
        try (Memory tv = new Memory(LibC.TIMEVAL_BYTES)) {
            tv.setLong(0, millis / 1000);
            tv.setLong(8, (millis % 1000) * 1000);
            if (LibC.INSTANCE.setsockopt(fd, LibC.SOL_SOCKET, LibC.SO_RCVTIMEO, tv, LibC.TIMEVAL_BYTES) != 0
                    || LibC.INSTANCE.setsockopt(fd, LibC.SOL_SOCKET, LibC.SO_SNDTIMEO, tv, LibC.TIMEVAL_BYTES) != 0) {
                throw system("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO) failed with " + lastError());
            }
        }
    }

    /** Milliseconds left before {@code deadline}, at least 1 (0 would mean no timeout at all). */
    private static long leftMillis(long deadline, Duration timeout, String who, String doing) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw timeout(who, timeout, doing);
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(left));
    }

    private static void closeAll(List<Integer> fds) {
        fds.forEach(LibC.INSTANCE::close);
        fds.clear();
    }

    private static void checkPlatform() {
        if (Native.POINTER_SIZE != 8 || Native.LONG_SIZE != 8) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "passing descriptors is built for 64-bit Linux "
                    + "(x86-64, aarch64), this JVM has " + Native.POINTER_SIZE + "-byte pointers").phase(PHASE).build();
        }
    }

    private static String lastError() {
        return LibC.describe(Native.getLastError());
    }

    private static JmscclppException timeout(String who, Duration timeout, String doing) {
        return JmscclppException.builder(ErrorCode.TIMEOUT, who + " did not answer within " + timeout.toMillis()
                + " ms (" + doing + ")").phase(PHASE).build();
    }

    private static JmscclppException remote(String detail) {
        return JmscclppException.builder(ErrorCode.REMOTE_ERROR, detail).phase(PHASE).build();
    }

    private static JmscclppException system(String detail) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, detail).phase(PHASE).build();
    }

    /**
     * One descriptor filed under a token: {@link #token()} is what the owner sends to the peer it
     * shares the descriptor with. {@link #close()} withdraws it: a later request with the token is
     * refused. Idempotent.
     */
    final class Grant implements AutoCloseable {
        private final long id;
        private final byte[] token;
        private final int fd;

        private Grant(long id, byte[] token, int fd) {
            this.id = id;
            this.token = token;
            this.fd = fd;
        }

        /** The token, a copy. */
        byte[] token() {
            return token.clone();
        }

        /** The server's name, which the peer connects to. */
        String serverName() {
            return name;
        }

        @Override
        public void close() {
            synchronized (grants) {
                grants.remove(id, this);
            }
        }
    }
}
