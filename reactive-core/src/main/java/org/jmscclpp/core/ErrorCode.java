package org.jmscclpp.core;

/**
 * What went wrong, in the categories MSCCL++ and NCCL users already know.
 */
public enum ErrorCode {
    /** A deadline passed: the operation names the rank, peer, tag and phase it was waiting in. */
    TIMEOUT,
    /** A peer failed, disconnected or reported an error of its own. */
    REMOTE_ERROR,
    /** The caller (or a peer's caller) used the API wrongly: bad rank, size, tag, address or bytes. */
    INVALID_USAGE,
    /** {@code abort()} was called on this rank or on a peer that could reach it. */
    ABORTED,
    /** The operating system refused something: bind, connect, a file, a mapping. */
    SYSTEM_ERROR,
    /** A bug in jmscclpp: an invariant did not hold. */
    INTERNAL_ERROR
}
