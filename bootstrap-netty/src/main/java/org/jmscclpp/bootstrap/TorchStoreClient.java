package org.jmscclpp.bootstrap;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * A client of PyTorch's c10d {@code TCPStore}: the key-value server that {@code torchrun} runs at
 * {@code MASTER_ADDR:MASTER_PORT} for its workers ({@code TORCHELASTIC_USE_AGENT_STORE=True}).
 * jmscclpp's ranks publish and fetch the job's unique id there instead of binding that port.
 *
 * <p>The wire protocol (PyTorch's {@code TCPStoreBackend.hpp}, served by {@code TCPStoreLibUvBackend.cpp}, the
 * default since torch 2.4, and by the older {@code TCPStoreBackend.cpp}): every request is a one-byte query type
 * followed by its arguments; integers are little-endian, strings and byte vectors are a {@code uint64} length and
 * the bytes. A connection first sends {@code VALIDATE} with the magic {@code 0x3C85F7CE} (no reply). This client
 * uses {@code SET} (no reply), {@code GET} (reply: a vector), {@code CHECK} (reply: one byte, 0 ready, 1 not
 * ready) and {@code WAIT} (reply: one byte, 0 once every key is set). Keys are at most 8 KiB, values 8 MiB; like
 * torch's own client, this one puts {@code "/"} before every key, so python's {@code store.get(key)} sees it.
 *
 * <p>Every call is bounded by the deadline given at {@link #connect}; a store that does not answer in time is
 * {@link ErrorCode#TIMEOUT}, one that answers what a TCPStore never would is {@link ErrorCode#REMOTE_ERROR}, and
 * both name the phase and the store's address. Blocking socket I/O: call it from a virtual thread.
 */
final class TorchStoreClient implements AutoCloseable {

    static final int VALIDATION_MAGIC = 0x3C85F7CE;
    static final byte VALIDATE = 0;
    static final byte SET = 1;
    static final byte GET = 3;
    static final byte CHECK = 5;
    static final byte WAIT = 6;
    private static final int MAX_KEY_BYTES = 8 * 1024;
    private static final int MAX_VALUE_BYTES = 8 * 1024 * 1024;
    private static final String PHASE = "torchrun store";
    private static final String KEY_PREFIX = "/";

    private final Socket socket;
    private final String address;
    private final long deadline;
    private final int rank;
    private final InputStream in;
    private final OutputStream out;

    private TorchStoreClient(Socket socket, String address, long deadline, int rank) throws IOException {
        this.socket = socket;
        this.address = address;
        this.deadline = deadline;
        this.rank = rank;
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
    }

    /**
     * Connects to the store at {@code host:port} and validates the connection, retrying a refused connection
     * (the store may still be starting) until {@code deadlineNanos} ({@link System#nanoTime()} based).
     *
     * @throws JmscclppException TIMEOUT when no connection is accepted by the deadline (naming the last reason),
     *                           INVALID_USAGE when the host name does not resolve, REMOTE_ERROR when the server
     *                           is not a TCPStore
     */
    static TorchStoreClient connect(String host, int port, long deadlineNanos, int rank) {
        String address = host + ":" + port;
        long backoffMicros = 1_000;
        String lastReason = "no time left to try";
        while (true) {
            Socket s = new Socket();
            try {
                int budget = millisLeft(deadlineNanos);
                if (budget <= 0) {
                    s.close();
                } else {
                    s.setTcpNoDelay(true);
                    s.connect(new InetSocketAddress(host, port), budget);
                    TorchStoreClient client = new TorchStoreClient(s, address, deadlineNanos, rank);
                    client.validate();
                    return client;
                }
            } catch (UnknownHostException e) {
                closeQuietly(s);
                throw error(ErrorCode.INVALID_USAGE, rank, address, "connect",
                        "the store's host '" + host + "' does not resolve", e);
            } catch (ConnectException | SocketTimeoutException e) {
                closeQuietly(s);
                lastReason = e.getMessage();
            } catch (IOException e) {
                closeQuietly(s);
                lastReason = e.toString();
            } catch (JmscclppException e) {
                closeQuietly(s);
                throw e;
            }
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw error(ErrorCode.TIMEOUT, rank, address, "connect",
                        "no TCPStore accepted a connection before the deadline (last: " + lastReason + ")", null);
            }
            // a retry after a refused connection, not a wait for a peer: back off up to 100 ms
            LockSupport.parkNanos(Math.min(left, TimeUnit.MICROSECONDS.toNanos(backoffMicros)));
            backoffMicros = Math.min(100_000, backoffMicros * 2);
        }
    }

    /** The store's address, {@code host:port}. */
    String address() {
        return address;
    }

    /** Sends the validation magic, then checks that a harmless {@code CHECK} gets a TCPStore's answer. */
    private void validate() {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(VALIDATE);
        writeInt(req, VALIDATION_MAGIC);
        send(req, "validate");
        check("jmscclpp/validate", "validate");
    }

    /** Sets {@code key} to {@code value} and checks that the store holds it. */
    void set(String key, byte[] value) {
        if (value.length > MAX_VALUE_BYTES) {
            throw error(ErrorCode.INVALID_USAGE, rank, address, "set " + key,
                    "a value is at most " + MAX_VALUE_BYTES + " bytes, got " + value.length, null);
        }
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(SET);
        writeKey(req, key);
        writeLong(req, value.length);
        req.writeBytes(value);
        send(req, "set " + key);
        if (!check(key, "set " + key)) {
            throw error(ErrorCode.REMOTE_ERROR, rank, address, "set " + key,
                    "the store does not hold the key just set", null);
        }
    }

    /** Whether {@code key} is set. */
    boolean check(String key, String phase) {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(CHECK);
        writeLong(req, 1);
        writeKey(req, key);
        send(req, phase);
        int answer = readByte(phase);
        if (answer != 0 && answer != 1) {
            throw notAStore(phase, "answered CHECK with byte " + answer + " where a TCPStore answers 0 or 1");
        }
        return answer == 0;
    }

    /** Waits (up to the deadline) until {@code key} is set, then returns its value. */
    byte[] waitAndGet(String key) {
        String phase = "wait for " + key;
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(WAIT);
        writeLong(req, 1);
        writeKey(req, key);
        send(req, phase);
        int answer = readByte(phase);
        if (answer != 0) {
            throw notAStore(phase, "answered WAIT with byte " + answer + " where a TCPStore answers 0");
        }
        return get(key);
    }

    /** The value of {@code key} (empty where the key is not set). */
    byte[] get(String key) {
        String phase = "get " + key;
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(GET);
        writeKey(req, key);
        send(req, phase);
        long length = ByteBuffer.wrap(readFully(8, phase)).order(ByteOrder.LITTLE_ENDIAN).getLong();
        if (length < 0 || length > MAX_VALUE_BYTES) {
            throw notAStore(phase, "announced a value of " + Long.toUnsignedString(length) + " bytes");
        }
        return readFully((int) length, phase);
    }

    @Override
    public void close() {
        closeQuietly(socket);
    }

    private void send(ByteArrayOutputStream request, String phase) {
        try {
            out.write(request.toByteArray());
            out.flush();
        } catch (IOException e) {
            throw error(ErrorCode.REMOTE_ERROR, rank, address, phase, "the store closed the connection: " + e, e);
        }
    }

    private int readByte(String phase) {
        return readFully(1, phase)[0] & 0xff;
    }

    private byte[] readFully(int n, String phase) {
        byte[] buf = new byte[n];
        int off = 0;
        try {
            while (off < n) {
                int budget = millisLeft(deadline);
                if (budget <= 0) {
                    throw new SocketTimeoutException("deadline passed");
                }
                socket.setSoTimeout(budget);
                int r = in.read(buf, off, n - off);
                if (r < 0) {
                    throw new EOFException("the store closed the connection after " + off + " of " + n + " bytes");
                }
                off += r;
            }
            return buf;
        } catch (SocketTimeoutException e) {
            throw error(ErrorCode.TIMEOUT, rank, address, phase,
                    "no answer from the store before the deadline (" + off + " of " + n + " bytes came)", e);
        } catch (EOFException e) {
            throw notAStore(phase, e.getMessage());
        } catch (IOException e) {
            throw error(ErrorCode.REMOTE_ERROR, rank, address, phase, "reading from the store failed: " + e, e);
        }
    }

    private JmscclppException notAStore(String phase, String what) {
        return error(ErrorCode.REMOTE_ERROR, rank, address, phase,
                "the server there is not a torch TCPStore, or it dropped this client: it " + what, null);
    }

    private void writeKey(ByteArrayOutputStream req, String key) {
        // torch's client puts "/" before every key (TCPStore::keyPrefix_): so does this one, so that
        // store.get(key) in python sees what this client sets, and the other way round
        byte[] bytes = (KEY_PREFIX + key).getBytes(StandardCharsets.UTF_8);
        if (bytes.length > MAX_KEY_BYTES) {
            throw error(ErrorCode.INVALID_USAGE, rank, address, "key",
                    "a key is at most " + MAX_KEY_BYTES + " bytes, got " + bytes.length, null);
        }
        writeLong(req, bytes.length);
        req.writeBytes(bytes);
    }

    private static void writeInt(ByteArrayOutputStream req, int v) {
        req.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
    }

    private static void writeLong(ByteArrayOutputStream req, long v) {
        req.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
    }

    private static int millisLeft(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        return left <= 0 ? 0 : (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left)));
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing to release beyond the descriptor, which close frees either way
        }
    }

    private static JmscclppException error(ErrorCode code, int rank, String address, String phase, String detail,
                                           @Nullable Throwable cause) {
        return JmscclppException.builder(code, "torchrun's TCPStore at " + address + ": " + detail)
                .rank(rank).phase(PHASE + " (" + phase + ")").cause(cause).build();
    }
}
