package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.function.Consumer;
import org.jmscclpp.bootstrap.wire.WireBytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link AddressBook}: the book and its entries round trip; malformed bytes read as null, never throw. */
class AddressBookTest {

    /** Offsets inside one entry, from the byte diagram of {@link AddressBook}. */
    private static final int FAMILY = 8;
    private static final int PORT = 29;

    private static InetSocketAddress v4(String ip, int port) throws UnknownHostException {
        return new InetSocketAddress(InetAddress.getByName(ip), port);
    }

    private static InetSocketAddress v6(byte[] ip, int scope, int port) throws UnknownHostException {
        return new InetSocketAddress(Inet6Address.getByAddress(null, ip, scope), port);
    }

    private static AddressBook sample() throws UnknownHostException {
        byte[] linkLocal = new byte[16];
        linkLocal[0] = (byte) 0xFE;
        linkLocal[1] = (byte) 0x80;
        linkLocal[15] = 1;
        InetSocketAddress[] addrs = {
                v4("127.0.0.1", 1),
                v4("10.20.30.40", 65535),
                v6(InetAddress.getByName("2001:db8::5").getAddress(), 0, 50000),
                v6(linkLocal, 7, 12345),
                v4("192.168.1.2", 443),
        };
        long[] hosts = {11, 11, -5, Long.MAX_VALUE, 11};
        return AddressBook.of(hosts, new int[addrs.length], addrs);
    }

    private static byte[] encode(AddressBook book) {
        ByteBuf buf = Unpooled.buffer();
        try {
            book.writeTo(buf);
            return WireBytes.bytes(buf);
        } finally {
            buf.release();
        }
    }

    private static AddressBook read(byte[] bytes, int expectedSize) {
        ByteBuf buf = Unpooled.buffer(bytes.length).writeBytes(bytes);
        try {
            return AddressBook.read(buf, expectedSize);
        } finally {
            buf.release();
            assertEquals(0, buf.refCnt());
        }
    }

    @Test
    void bookRoundTripsIpv4AndIpv6WithScopes() throws UnknownHostException {
        AddressBook book = sample();
        byte[] bytes = encode(book);
        assertEquals(4 + book.size() * AddressBook.ENTRY_BYTES, bytes.length);
        AddressBook back = read(bytes, book.size());
        assertNotNull(back);
        assertEquals(book.size(), back.size());
        for (int r = 0; r < book.size(); r++) {
            assertEquals(book.address(r), back.address(r), "address of rank " + r);
            assertEquals(book.hostHash(r), back.hostHash(r), "host of rank " + r);
            assertEquals(book.address(r).getAddress().getClass(), back.address(r).getAddress().getClass());
            if (book.address(r).getAddress() instanceof Inet6Address v6) {
                assertEquals(v6.getScopeId(), ((Inet6Address) back.address(r).getAddress()).getScopeId());
            }
        }
        assertInstanceOf(Inet4Address.class, back.address(0).getAddress());
        assertEquals(7, ((Inet6Address) back.address(3).getAddress()).getScopeId());
        assertEquals(3, back.ranksOnHostOf(0));
        assertEquals(1, back.ranksOnHostOf(2));
        assertArrayEquals(bytes, encode(back), "re-encoding gives the same bytes");
    }

    @Test
    void emptyBookRoundTrips() {
        AddressBook back = read(encode(AddressBook.of(new long[0], new int[0], new InetSocketAddress[0])), 0);
        assertNotNull(back);
        assertEquals(0, back.size());
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 6, 0})
    void wrongExpectedSizeIsNull(int expected) throws UnknownHostException {
        assertNull(read(encode(sample()), expected));
    }

    @Test
    void truncatedOrOverlongBooksAreNull() throws UnknownHostException {
        byte[] bytes = encode(sample());
        for (int n = 0; n < bytes.length; n++) {
            assertNull(read(Arrays.copyOf(bytes, n), 5), "book cut at " + n + " bytes");
        }
        assertNull(read(Arrays.copyOf(bytes, bytes.length + 1), 5), "trailing byte");
    }

    private static void assertEntryMalformed(Consumer<byte[]> corrupt) throws UnknownHostException {
        byte[] bytes = encode(sample());
        corrupt.accept(bytes);
        assertNull(read(bytes, 5));
    }

    private static int entry(int rank) {
        return 4 + rank * AddressBook.ENTRY_BYTES;
    }

    @ParameterizedTest
    @ValueSource(bytes = {0, 5, 7, (byte) 0xFF})
    void unknownFamilyIsNull(byte family) throws UnknownHostException {
        assertEntryMalformed(b -> b[entry(2) + FAMILY] = family);
    }

    @Test
    void portZeroIsNull() throws UnknownHostException {
        assertEntryMalformed(b -> {
            b[entry(4) + PORT] = 0;
            b[entry(4) + PORT + 1] = 0;
        });
    }

    @Test
    void negativeCountIsNull() throws UnknownHostException {
        assertEntryMalformed(b -> Arrays.fill(b, 0, 4, (byte) 0xFF));
    }

    @Test
    void singleEntryRoundTripsThroughReadAddress() throws UnknownHostException {
        InetSocketAddress a = v6(InetAddress.getByName("fd00::1234").getAddress(), 0, 1);
        ByteBuf buf = Unpooled.buffer();
        try {
            AddressBook.writeEntry(buf, 99, 8, a);
            assertEquals(AddressBook.ENTRY_BYTES, buf.readableBytes());
            assertEquals(99, buf.readLongLE());
            assertEquals(a, AddressBook.readAddress(buf));
            assertEquals(8, buf.readUnsignedShortLE(), "cores");
            assertEquals(0, buf.readableBytes());
        } finally {
            buf.release();
        }
    }

    @Test
    void crowdedWhenSomeHostRunsMoreRanksThanCores() {
        InetSocketAddress a = new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 1000);
        InetSocketAddress[] four = {a, a, a, a};
        // two hosts of 2 ranks, 2 cores each: not crowded
        assertFalse(AddressBook.of(new long[] {1, 1, 2, 2}, new int[] {2, 2, 2, 2}, four).crowded());
        // host 2 runs 3 ranks on 2 cores
        assertTrue(AddressBook.of(new long[] {1, 2, 2, 2}, new int[] {4, 2, 2, 2}, four).crowded());
        // 4 ranks on one 64-core host: not crowded
        assertFalse(AddressBook.of(new long[] {7, 7, 7, 7}, new int[] {64, 64, 64, 64}, four).crowded());
    }
}
