package org.jmscclpp.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.samples.Blocking;

/**
 * The baseline of {@code jmscclpp bench ethernet}: one plain {@link SocketChannel} between the two
 * ranks, blocking, {@code TCP_NODELAY} on both ends, no framework. Rank 0 listens on every
 * interface and tells rank 1 its port over the bootstrap; rank 1 dials the host of the bootstrap
 * root, which rank 0 hosts. Transfers mirror the ETHERNET ones: a sender writes a size word and
 * the bytes, the receiver reads them into its buffer and answers with an 8-byte ack.
 *
 * <p>Reads and writes block without a deadline of their own (a blocking NIO socket has none); the
 * bound is the job's: {@code jmscclpp bench ethernet} kills ranks that outlive it.
 */
final class RawTcpLink implements AutoCloseable {

    private static final int TAG = 0x5243;   // "RC": bootstrap tag of the port message

    private final SocketChannel socket;
    private final ByteBuffer word = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);

    private RawTcpLink(SocketChannel socket) throws IOException {
        this.socket = socket;
        socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    /** Connects the two ranks; both call it at the same time. Waits at most {@code timeout} for the peer. */
    static RawTcpLink open(TcpBootstrap bs, int rank, String rootAddress, Duration timeout) throws IOException {
        if (rank == 0) {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(0));
                byte[] port = ByteBuffer.allocate(Integer.BYTES)
                        .putInt(((InetSocketAddress) server.getLocalAddress()).getPort()).array();
                Blocking.done(bs.send(1, TAG, port, timeout), timeout.plusSeconds(5), rank, "send the raw TCP port");
                // accept() would block without bound if rank 1 died: the socket's accept has no timeout
                // in NIO, so wait for it with a bounded poll of a non-blocking accept instead
                server.configureBlocking(false);
                long deadline = System.nanoTime() + timeout.toNanos();
                try (var selector = Selector.open()) {
                    server.register(selector, SelectionKey.OP_ACCEPT);
                    while (true) {
                        SocketChannel s = server.accept();
                        if (s != null) {
                            s.configureBlocking(true);
                            return new RawTcpLink(s);
                        }
                        long left = deadline - System.nanoTime();
                        if (left <= 0) {
                            throw new IOException("rank 1 did not dial the raw TCP socket within " + timeout);
                        }
                        selector.select(Math.max(1, left / 1_000_000));
                        selector.selectedKeys().clear();
                    }
                }
            }
        }
        byte[] port = Blocking.value(bs.recv(0, TAG, timeout), timeout.plusSeconds(5), rank, "receive the raw TCP port");
        InetAddress host = InetAddress.getByName(hostOf(rootAddress));
        SocketChannel s = SocketChannel.open();
        try {
            s.socket().connect(new InetSocketAddress(host, ByteBuffer.wrap(port).getInt()), (int) timeout.toMillis());
            return new RawTcpLink(s);
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /** The host part of a root address: {@code ip:port}, {@code if:ip:port}, {@code [v6]:port}, {@code host:port}. */
    static String hostOf(String rootAddress) {
        String host = rootAddress.substring(0, rootAddress.lastIndexOf(':'));
        if (host.startsWith("[") && host.endsWith("]")) {
            return host.substring(1, host.length() - 1);
        }
        int colon = host.indexOf(':');
        return colon < 0 ? host : host.substring(colon + 1);
    }

    /** Sends {@code size} bytes of {@code src} and waits for the receiver's ack: one timed transfer. */
    void send(MemorySegment src, long size) throws IOException {
        putWord(size);
        ByteBuffer body = src.asSlice(0, size).asByteBuffer();
        while (body.hasRemaining()) {
            socket.write(body);
        }
        long ack = readWord();
        if (ack != size) {
            throw new IOException("raw TCP ack of " + ack + " bytes, sent " + size);
        }
    }

    /** Receives one transfer into {@code dst} and acks it; returns its size. */
    long receive(MemorySegment dst) throws IOException {
        long size = readWord();
        if (size < 0 || size > dst.byteSize()) {
            throw new IOException("raw TCP transfer of " + size + " bytes into a buffer of " + dst.byteSize());
        }
        ByteBuffer body = dst.asSlice(0, size).asByteBuffer();
        while (body.hasRemaining()) {
            if (socket.read(body) < 0) {
                throw new IOException("the peer closed the raw TCP socket");
            }
        }
        putWord(size);
        return size;
    }

    /** Sends one 4-byte int (a ping-pong turn's message). */
    void sendInt(int v) throws IOException {
        word.clear().putInt(v).flip();
        while (word.hasRemaining()) {
            socket.write(word);
        }
    }

    /** Reads one 4-byte int. */
    int readInt() throws IOException {
        word.clear().limit(Integer.BYTES);
        fill();
        return word.getInt(0);
    }

    private void putWord(long v) throws IOException {
        word.clear().putLong(v).flip();
        while (word.hasRemaining()) {
            socket.write(word);
        }
    }

    private long readWord() throws IOException {
        word.clear();
        fill();
        return word.getLong(0);
    }

    private void fill() throws IOException {
        while (word.hasRemaining()) {
            if (socket.read(word) < 0) {
                throw new IOException("the peer closed the raw TCP socket");
            }
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
