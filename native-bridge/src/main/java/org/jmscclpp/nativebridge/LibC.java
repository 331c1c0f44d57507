package org.jmscclpp.nativebridge;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * The few libc entry points the CUDA backend needs to hand a GPU buffer's file descriptor to a
 * peer process: Unix domain sockets ({@code socket}, {@code bind}, {@code listen},
 * {@code accept4}, {@code connect}, {@code sendmsg}/{@code recvmsg} with {@code SCM_RIGHTS}),
 * {@code poll} and an {@code eventfd} for the server's wake-up, and the {@code pidfd_open} and
 * {@code pidfd_getfd} system calls (Linux 5.6+), which glibc exposes only through
 * {@code syscall}. Interface mapping, since {@code syscall} is variadic; these calls run once per
 * shared buffer, never on a hot path.
 *
 * <p>Constants and the structure layouts that callers build by hand ({@code sockaddr_un},
 * {@code msghdr}, {@code iovec}, {@code cmsghdr}, {@code pollfd}, {@code timeval},
 * {@code ucred}) are those of Linux on 64-bit x86 and ARM (LP64, glibc): the two agree on every
 * one used here, the system call numbers included (pidfd's are of the common table, 424 and up).
 */
public interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    /** {@code SYS_pidfd_open}, the same on x86-64 and aarch64. */
    long SYS_PIDFD_OPEN = 434;
    /** {@code SYS_pidfd_getfd}, the same on x86-64 and aarch64. */
    long SYS_PIDFD_GETFD = 438;

    int AF_UNIX = 1;
    int SOCK_STREAM = 1;
    int SOCK_NONBLOCK = 0x800;
    int SOCK_CLOEXEC = 0x80000;
    int SOL_SOCKET = 1;
    int SO_PEERCRED = 17;
    int SO_RCVTIMEO = 20;
    int SO_SNDTIMEO = 21;
    int SCM_RIGHTS = 1;
    int MSG_CTRUNC = 0x8;
    int MSG_DONTWAIT = 0x40;
    int MSG_NOSIGNAL = 0x4000;
    int MSG_CMSG_CLOEXEC = 0x40000000;
    int POLLIN = 0x1;
    int EFD_CLOEXEC = 0x80000;
    int EINTR = 4;
    int EAGAIN = 11;
    int EPERM = 1;
    int ECONNABORTED = 103;

    /** {@code sizeof(struct sockaddr_un)}: a 2-byte family, then 108 bytes of path. */
    int SOCKADDR_UN_BYTES = 110;
    /** {@code sizeof(struct msghdr)}: name, namelen (+4 padding), iov, iovlen, control, controllen, flags (+4). */
    int MSGHDR_BYTES = 56;
    /** {@code sizeof(struct iovec)}: base, len. */
    int IOVEC_BYTES = 16;
    /** {@code sizeof(struct cmsghdr)} before its data: len (size_t), level, type. */
    int CMSGHDR_BYTES = 16;
    /** {@code sizeof(struct pollfd)}: fd, events, revents. */
    int POLLFD_BYTES = 8;
    /** {@code sizeof(struct timeval)}: seconds, microseconds. */
    int TIMEVAL_BYTES = 16;
    /** {@code sizeof(struct ucred)}: pid, uid, gid. */
    int UCRED_BYTES = 12;

    long syscall(long number, Object... args);

    int close(int fd);

    int socket(int domain, int type, int protocol);

    int bind(int fd, Pointer address, int length);

    int listen(int fd, int backlog);

    int accept4(int fd, Pointer address, Pointer length, int flags);

    int connect(int fd, Pointer address, int length);

    int setsockopt(int fd, int level, int name, Pointer value, int length);

    int getsockopt(int fd, int level, int name, Pointer value, Pointer length);

    long sendmsg(int fd, Pointer message, int flags);

    long recvmsg(int fd, Pointer message, int flags);

    int poll(Pointer fds, long count, int timeoutMillis);

    int eventfd(int initial, int flags);

    long read(int fd, Pointer buffer, long count);

    long write(int fd, Pointer buffer, long count);

    String strerror(int errno);

    /** {@code errno N (text)} for messages. */
    static String describe(int errno) {
        String text;
        try {
            text = INSTANCE.strerror(errno);
        } catch (RuntimeException | LinkageError e) {
            text = null;
        }
        return "errno " + errno + (text == null ? "" : " (" + text + ")");
    }
}
