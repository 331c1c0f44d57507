package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jspecify.annotations.Nullable;

/**
 * Where every rank listens and which host it is on: gathered by the root from the check-ins,
 * handed to rank 0 and spread from there along a binomial tree.
 *
 * <p>One entry (also the body of a {@link Frame#CHECK_IN}, after rank and rank count):
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      8  host hash ({@code HostIdentity.hostHash()})
 *      8      1  address family: 4 or 6
 *      9     16  IP address (IPv4 in the first 4 bytes)
 *     25      4  IPv6 scope id
 *     29      2  port
 *     31      2  cores of the rank's host (as the JVM sees them)
 * </pre>
 * The book is the rank count (4 bytes) followed by one entry per rank in rank order. Entries are
 * checked when the book is read and turned into addresses only when a connection needs one (a
 * rank of a thousand-rank job talks to a handful of peers).
 */
final class AddressBook {

    static final int ENTRY_BYTES = 33;
    private static final int ADDRESS_BYTES = 23;

    private final byte[] entries;
    private final int size;
    private final @Nullable InetSocketAddress[] decoded;

    private AddressBook(byte[] entries, int size) {
        this.entries = entries;
        this.size = size;
        this.decoded = new InetSocketAddress[size];
    }

    /** A book of the given entries (the root's view). */
    static AddressBook of(long[] hostHashes, int[] cores, InetSocketAddress[] addresses) {
        ByteBuf buf = Unpooled.buffer(addresses.length * ENTRY_BYTES);
        for (int r = 0; r < addresses.length; r++) {
            writeEntry(buf, hostHashes[r], cores[r], addresses[r]);
        }
        return new AddressBook(buf.array(), addresses.length);
    }

    int size() {
        return size;
    }

    synchronized InetSocketAddress address(int rank) {
        InetSocketAddress a = decoded[rank];
        if (a == null) {
            a = readAddress(Unpooled.wrappedBuffer(entries, rank * ENTRY_BYTES + 8, ADDRESS_BYTES));
            decoded[rank] = a;
        }
        return a;
    }

    long hostHash(int rank) {
        return Unpooled.wrappedBuffer(entries, rank * ENTRY_BYTES, 8).readLongLE();
    }

    int ranksOnHostOf(int rank) {
        long mine = hostHash(rank);
        int n = 0;
        for (int r = 0; r < size; r++) {
            if (hostHash(r) == mine) {
                n++;
            }
        }
        return n;
    }

    /**
     * Whether some host of the job runs more ranks than it has cores. Every rank computes it from
     * the same book, so every rank makes the same choice of algorithm from it.
     */
    boolean crowded() {
        java.util.Map<Long, int[]> hosts = new java.util.HashMap<>();
        ByteBuf all = Unpooled.wrappedBuffer(entries);
        for (int r = 0; r < size; r++) {
            int[] ranksAndCores = hosts.computeIfAbsent(all.getLongLE(r * ENTRY_BYTES), h -> new int[2]);
            ranksAndCores[0]++;
            ranksAndCores[1] = Math.max(ranksAndCores[1], all.getUnsignedShortLE(r * ENTRY_BYTES + 8 + ADDRESS_BYTES));
        }
        for (int[] h : hosts.values()) {
            if (h[0] > h[1]) {
                return true;
            }
        }
        return false;
    }

    void writeTo(ByteBuf out) {
        out.writeIntLE(size);
        out.writeBytes(entries, 0, size * ENTRY_BYTES);
    }

    /** Reads a book of exactly {@code expectedSize} well-formed entries; returns null if the bytes are not one. */
    static @Nullable AddressBook read(ByteBuf in, int expectedSize) {
        if (in.readableBytes() < 4 || in.readIntLE() != expectedSize
                || in.readableBytes() != (long) expectedSize * ENTRY_BYTES) {
            return null;
        }
        byte[] entries = new byte[expectedSize * ENTRY_BYTES];
        in.readBytes(entries);
        ByteBuf check = Unpooled.wrappedBuffer(entries);
        for (int r = 0; r < expectedSize; r++) {
            int at = r * ENTRY_BYTES;
            byte family = check.getByte(at + 8);
            int port = check.getUnsignedShortLE(at + 29);
            if ((family != 4 && family != 6) || port == 0) {
                return null;
            }
        }
        return new AddressBook(entries, expectedSize);
    }

    static void writeEntry(ByteBuf out, long hostHash, int cores, InetSocketAddress address) {
        InetAddress ip = address.getAddress();
        out.writeLongLE(hostHash);
        out.writeByte(ip instanceof Inet6Address ? 6 : 4);
        out.writeBytes(Arrays.copyOf(ip.getAddress(), 16));
        out.writeIntLE(ip instanceof Inet6Address v6 ? v6.getScopeId() : 0);
        out.writeShortLE(address.getPort());
        out.writeShortLE(Math.min(cores, 0xFFFF));
    }

    /** Reads family, address, scope and port; null when malformed. */
    static @Nullable InetSocketAddress readAddress(ByteBuf in) {
        byte family = in.readByte();
        byte[] addr = new byte[16];
        in.readBytes(addr);
        int scope = in.readIntLE();
        int port = in.readUnsignedShortLE();
        if (port == 0) {
            return null;
        }
        try {
            InetAddress ip = switch (family) {
                case 4 -> InetAddress.getByAddress(Arrays.copyOf(addr, 4));
                case 6 -> Inet6Address.getByAddress(null, addr, scope);
                default -> null;
            };
            return ip == null ? null : new InetSocketAddress(ip, port);
        } catch (UnknownHostException e) {
            return null;
        }
    }
}
