package org.jmscclpp.nativebridge;

import com.sun.jna.Library;
import com.sun.jna.Native;

/**
 * The few libc entry points the CUDA backend needs to take a peer's file descriptor: the
 * {@code pidfd_open} and {@code pidfd_getfd} system calls (Linux 5.6+), which glibc exposes only
 * through {@code syscall}, and {@code close}. Interface mapping, since {@code syscall} is
 * variadic; these calls run once per imported buffer, never on a hot path.
 */
public interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    /** {@code SYS_pidfd_open} on x86-64. */
    long SYS_PIDFD_OPEN = 434;
    /** {@code SYS_pidfd_getfd} on x86-64. */
    long SYS_PIDFD_GETFD = 438;

    long syscall(long number, Object... args);

    int close(int fd);
}
