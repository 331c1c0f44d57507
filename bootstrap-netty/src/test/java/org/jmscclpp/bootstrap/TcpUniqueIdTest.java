package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.function.Consumer;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link TcpUniqueId}: its 128 bytes round trip through {@link UniqueId}; foreign ids are INVALID_USAGE. */
class TcpUniqueIdTest {

    /** Offsets from the byte diagram of {@link TcpUniqueId}. */
    private static final int VERSION = 4;
    private static final int FAMILY = 6;
    private static final int PORT = 24;
    private static final int SECRET = 32;

    private static InetSocketAddress at(String ip, int port) throws UnknownHostException {
        return new InetSocketAddress(InetAddress.getByName(ip), port);
    }

    private static void assertSameId(TcpUniqueId expected, TcpUniqueId actual) {
        assertEquals(expected.root(), actual.root());
        assertArrayEquals(expected.secret(), actual.secret());
    }

    @Test
    void ipv4RoundTrips() throws UnknownHostException {
        TcpUniqueId id = TcpUniqueId.random(at("10.1.2.3", 50000));
        UniqueId wire = id.toUniqueId();
        TcpUniqueId back = TcpUniqueId.from(wire);
        assertSameId(id, back);
        assertInstanceOf(Inet4Address.class, back.root().getAddress());
        // and through the public text form every launcher passes around
        assertSameId(id, TcpUniqueId.from(UniqueId.parse(wire.toString())));
    }

    @Test
    void ipv6RoundTripsWithItsScope() throws UnknownHostException {
        byte[] linkLocal = InetAddress.getByName("fe80::42").getAddress();
        TcpUniqueId id = TcpUniqueId.random(new InetSocketAddress(Inet6Address.getByAddress(null, linkLocal, 3), 65535));
        TcpUniqueId back = TcpUniqueId.from(id.toUniqueId());
        assertSameId(id, back);
        assertEquals(3, ((Inet6Address) back.root().getAddress()).getScopeId());
        TcpUniqueId loopback = TcpUniqueId.random(at("::1", 1));
        assertSameId(loopback, TcpUniqueId.from(loopback.toUniqueId()));
    }

    @Test
    void randomIdsHaveDifferentSecrets() throws UnknownHostException {
        InetSocketAddress root = at("127.0.0.1", 1234);
        byte[] a = TcpUniqueId.random(root).secret();
        byte[] b = TcpUniqueId.random(root).secret();
        assertEquals(Preamble.SECRET_BYTES, a.length);
        assertFalse(Arrays.equals(a, b));
    }

    private static void assertInvalid(Consumer<byte[]> corrupt, String messagePart) throws UnknownHostException {
        byte[] bytes = TcpUniqueId.random(at("192.168.0.1", 4000)).toUniqueId().toBytes();
        corrupt.accept(bytes);
        JmscclppException e = assertThrows(JmscclppException.class, () -> TcpUniqueId.from(UniqueId.fromBytes(bytes)));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("unique id", e.phase());
        assertTrue(e.detail().contains(messagePart), e.getMessage());
    }

    @Test
    void badMagicIsInvalidUsage() throws UnknownHostException {
        assertInvalid(b -> b[0] ^= 1, "bad magic");
    }

    @Test
    void allZeroIdIsInvalidUsage() throws UnknownHostException {
        assertInvalid(b -> Arrays.fill(b, (byte) 0), "bad magic");
    }

    @Test
    void otherVersionIsInvalidUsage() throws UnknownHostException {
        assertInvalid(b -> b[VERSION] = (byte) (Preamble.VERSION + 1), "version");
    }

    @Test
    void portZeroIsInvalidUsage() throws UnknownHostException {
        assertInvalid(b -> {
            b[PORT] = 0;
            b[PORT + 1] = 0;
        }, "port 0");
    }

    @ParameterizedTest
    @ValueSource(bytes = {0, 5, 44, (byte) 0xFF})
    void unknownFamilyIsInvalidUsage(byte family) throws UnknownHostException {
        assertInvalid(b -> b[FAMILY] = family, "family");
    }

    @Test
    void secretSitsWhereTheDiagramSays() throws UnknownHostException {
        TcpUniqueId id = TcpUniqueId.random(at("10.0.0.1", 7));
        byte[] bytes = id.toUniqueId().toBytes();
        byte[] inId = Arrays.copyOfRange(bytes, SECRET, SECRET + Preamble.SECRET_BYTES);
        assertArrayEquals(id.secret(), inId);
        for (int i = SECRET + Preamble.SECRET_BYTES; i < UniqueId.BYTES; i++) {
            assertEquals(0, bytes[i], "reserved byte " + i);
        }
    }

    @Test
    void derivedIsDeterministic() throws UnknownHostException {
        assertArrayEquals(TcpUniqueId.derived(at("10.0.0.1", 5000), "s").secret(),
                TcpUniqueId.derived(at("10.0.0.1", 5000), "s").secret());
        assertArrayEquals(TcpUniqueId.derived(at("10.0.0.1", 5000), null).secret(),
                TcpUniqueId.derived(at("10.0.0.1", 5000), null).secret());
    }

    @Test
    void derivedDiffersByAddress() throws UnknownHostException {
        byte[] base = TcpUniqueId.derived(at("10.0.0.1", 5000), "s").secret();
        assertFalse(Arrays.equals(base, TcpUniqueId.derived(at("10.0.0.2", 5000), "s").secret()), "ip");
        assertFalse(Arrays.equals(base, TcpUniqueId.derived(at("10.0.0.1", 5001), "s").secret()), "port");
        assertFalse(Arrays.equals(base, TcpUniqueId.derived(at("fd00::1", 5000), "s").secret()), "v6");
    }

    @Test
    void derivedDiffersBySharedSecret() throws UnknownHostException {
        InetSocketAddress root = at("10.0.0.1", 5000);
        byte[] none = TcpUniqueId.derived(root, null).secret();
        byte[] a = TcpUniqueId.derived(root, "alpha").secret();
        byte[] b = TcpUniqueId.derived(root, "beta").secret();
        assertFalse(Arrays.equals(none, a));
        assertFalse(Arrays.equals(a, b));
        assertFalse(Arrays.equals(none, b));
        assertEquals(Preamble.SECRET_BYTES, a.length);
    }

    @Test
    void derivedIdRoundTripsLikeARandomOne() throws UnknownHostException {
        TcpUniqueId id = TcpUniqueId.derived(at("172.16.5.4", 29500), "job-7");
        assertSameId(id, TcpUniqueId.from(id.toUniqueId()));
    }
}
