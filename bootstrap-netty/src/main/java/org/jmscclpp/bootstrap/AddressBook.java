package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

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
 * </pre>
 * The book is the rank count (4 bytes) followed by one entry per rank in rank order.
 */
final class AddressBook {

    static final int ENTRY_BYTES = 31;

    private final long[] hostHashes;
    private final InetSocketAddress[] addresses;

    AddressBook(long[] hostHashes, InetSocketAddress[] addresses) {
        this.hostHashes = hostHashes;
        this.addresses = addresses;
    }

    int size() {
        return addresses.length;
    }

    InetSocketAddress address(int rank) {
        return addresses[rank];
    }

    long hostHash(int rank) {
        return hostHashes[rank];
    }

    int ranksOnHostOf(int rank) {
        long mine = hostHashes[rank];
        int n = 0;
        for (long h : hostHashes) {
            if (h == mine) {
                n++;
            }
        }
        return n;
    }

    void writeTo(ByteBuf out) {
        out.writeIntLE(addresses.length);
        for (int r = 0; r < addresses.length; r++) {
            writeEntry(out, hostHashes[r], addresses[r]);
        }
    }

    /** Reads a book of exactly {@code expectedSize} entries; returns null if the bytes are not one. */
    static AddressBook read(ByteBuf in, int expectedSize) {
        if (in.readableBytes() < 4 || in.readIntLE() != expectedSize
                || in.readableBytes() != (long) expectedSize * ENTRY_BYTES) {
            return null;
        }
        long[] hashes = new long[expectedSize];
        InetSocketAddress[] addrs = new InetSocketAddress[expectedSize];
        for (int r = 0; r < expectedSize; r++) {
            hashes[r] = in.readLongLE();
            addrs[r] = readAddress(in);
            if (addrs[r] == null) {
                return null;
            }
        }
        return new AddressBook(hashes, addrs);
    }

    static void writeEntry(ByteBuf out, long hostHash, InetSocketAddress address) {
        InetAddress ip = address.getAddress();
        out.writeLongLE(hostHash);
        out.writeByte(ip instanceof Inet6Address ? 6 : 4);
        out.writeBytes(Arrays.copyOf(ip.getAddress(), 16));
        out.writeIntLE(ip instanceof Inet6Address v6 ? v6.getScopeId() : 0);
        out.writeShortLE(address.getPort());
    }

    /** Reads family, address, scope and port; null when malformed. */
    static InetSocketAddress readAddress(ByteBuf in) {
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
