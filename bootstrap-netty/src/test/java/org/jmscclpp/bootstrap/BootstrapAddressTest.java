package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BootstrapAddressTest {

    /** A resolver that must not be called: literals never touch DNS. */
    private static final BootstrapAddress.Resolver NO_DNS = host -> fail("DNS lookup of '" + host + "' for a literal");

    private static BootstrapAddress literal(String text) {
        return BootstrapAddress.parse(text, null, NO_DNS);
    }

    private static BootstrapAddress.Resolver hosts(String name, String... addresses) {
        return host -> {
            if (!host.equals(name)) {
                throw new UnknownHostException(host + ": Name or service not known");
            }
            InetAddress[] out = new InetAddress[addresses.length];
            for (int i = 0; i < addresses.length; i++) {
                out[i] = InetAddress.getByAddress(name, InetAddress.ofLiteral(addresses[i]).getAddress());
            }
            return out;
        };
    }

    private static void assertInvalid(String text, BootstrapAddress.Resolver resolver, @Nullable String family) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> BootstrapAddress.parse(text, family, resolver),
                "'" + text + "' should be refused");
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        assertEquals("address", e.phase(), e.getMessage());
        assertTrue(e.detail().contains("'" + text + "'"), "detail names the string: " + e.detail());
    }

    // ---- accepted forms ----

    @Test
    void ipv4AndPort() {
        BootstrapAddress a = literal("10.0.0.1:5000");
        assertNull(a.interfacePrefix());
        assertEquals("10.0.0.1", a.host());
        assertEquals(5000, a.port());
        assertEquals(new InetSocketAddress(InetAddress.ofLiteral("10.0.0.1"), 5000), a.socketAddress());
        assertEquals(InetAddress.ofLiteral("10.0.0.1"), a.address());
        assertEquals("10.0.0.1:5000", a.toString());
    }

    @Test
    void surroundingWhitespaceIsDropped() {
        assertEquals("10.0.0.1:5000", literal("  10.0.0.1:5000\n").toString());
    }

    @Test
    void portBounds() {
        assertEquals(1, literal("10.0.0.1:1").port());
        assertEquals(65535, literal("10.0.0.1:65535").port());
    }

    @Test
    void ipv4Extremes() {
        assertEquals("0.0.0.0:7", literal("0.0.0.0:7").toString());
        assertEquals("255.255.255.255:7", literal("255.255.255.255:7").toString());
    }

    @Test
    void interfacePrefixWithIpv4() {
        BootstrapAddress a = literal("eth0:10.0.0.1:5000");
        assertEquals("eth0", a.interfacePrefix());
        assertEquals("10.0.0.1", a.host());
        assertEquals(5000, a.port());
        assertEquals("10.0.0.1:5000", a.toString(), "the canonical form leaves the interface out");
    }

    @Test
    void interfaceListsInThePrefix() {
        assertEquals("=ib0", literal("=ib0:10.0.0.1:5000").interfacePrefix());
        assertEquals("^docker", literal("^docker:10.0.0.1:5000").interfacePrefix());
        assertEquals("eth,ib", literal("eth,ib:10.0.0.1:5000").interfacePrefix());
    }

    @Test
    void bracketedIpv6() {
        BootstrapAddress a = literal("[::1]:5000");
        assertNull(a.interfacePrefix());
        assertEquals("::1", a.host());
        assertInstanceOf(Inet6Address.class, a.address());
        assertTrue(a.address().isLoopbackAddress());
        assertEquals("[::1]:5000", a.toString());
        assertEquals(new InetSocketAddress(InetAddress.ofLiteral("::1"), 5000), a.socketAddress());
    }

    @Test
    void ipv6IsPrintedInRfc5952Form() {
        BootstrapAddress a = literal("[FD00:0000:0:0:0:0:0:0002]:80");
        assertEquals("FD00:0000:0:0:0:0:0:0002", a.host(), "host() is kept as written");
        assertEquals("[fd00::2]:80", a.toString());
    }

    @Test
    void ipv6WithNumericScope() {
        BootstrapAddress a = literal("[fe80::1%7]:5000");
        assertEquals("fe80::1%7", a.host());
        Inet6Address a6 = assertInstanceOf(Inet6Address.class, a.address());
        assertEquals(7, a6.getScopeId());
        assertEquals("[fe80::1%7]:5000", a.toString());
    }

    @Test
    void ipv6WithInterfaceScopeOfAnInterfaceWithoutLinkLocalAddress() throws SocketException {
        NetworkInterface lo = NetworkInterface.getByName("lo");
        assumeTrue(lo != null, "this machine has no interface 'lo'");
        BootstrapAddress a = literal("[fe80::1%lo]:5000");
        Inet6Address a6 = assertInstanceOf(Inet6Address.class, a.address());
        assertEquals(lo.getIndex(), a6.getScopeId());
        assertEquals("fe80::1%lo", a.host());
    }

    @Test
    void ipv6WithInterfaceScopeKeepsTheName() throws SocketException {
        Optional<NetworkInterface> withLinkLocal = NetworkInterface.networkInterfaces()
                .filter(n -> n.inetAddresses().anyMatch(x -> x instanceof Inet6Address && x.isLinkLocalAddress()))
                .findFirst();
        assumeTrue(withLinkLocal.isPresent(), "no interface with an IPv6 link-local address on this machine");
        String name = withLinkLocal.get().getName();
        BootstrapAddress a = literal("[fe80::1%" + name + "]:5000");
        Inet6Address a6 = assertInstanceOf(Inet6Address.class, a.address());
        assertEquals(withLinkLocal.get().getIndex(), a6.getScopeId());
        assertEquals("[fe80::1%" + name + "]:5000", a.toString());
    }

    @Test
    void interfacePrefixWithIpv6() {
        BootstrapAddress a = literal("ib0:[fd00::2]:5000");
        assertEquals("ib0", a.interfacePrefix());
        assertEquals("fd00::2", a.host());
        assertEquals("[fd00::2]:5000", a.toString());
    }

    @Test
    void ipv4MappedIpv6BecomesIpv4() {
        BootstrapAddress a = literal("[::ffff:10.0.0.1]:5000");
        assertInstanceOf(Inet4Address.class, a.address());
        assertEquals("10.0.0.1:5000", a.toString());
    }

    @Test
    void hostNameIsResolvedToItsFirstAddress() {
        BootstrapAddress a = BootstrapAddress.parse("node7:5000", null, hosts("node7", "fd00::7", "10.0.0.7"));
        assertNull(a.interfacePrefix());
        assertEquals("node7", a.host());
        assertEquals(InetAddress.ofLiteral("fd00::7"), a.address());
        assertEquals("[fd00::7]:5000", a.toString());
    }

    @Test
    void familyChoosesAmongAHostsAddresses() {
        BootstrapAddress.Resolver r = hosts("node7", "fd00::7", "10.0.0.7");
        assertEquals(InetAddress.ofLiteral("10.0.0.7"), BootstrapAddress.parse("node7:5000", "AF_INET", r).address());
        assertEquals(InetAddress.ofLiteral("fd00::7"), BootstrapAddress.parse("node7:5000", "AF_INET6", r).address());
        assertInvalid("node7:5000", hosts("node7", "10.0.0.7"), "AF_INET6");
    }

    @Test
    void familyDoesNotApplyToLiterals() {
        assertEquals("10.0.0.1:5000", BootstrapAddress.parse("10.0.0.1:5000", "AF_INET6", NO_DNS).toString());
    }

    @Test
    void interfacePrefixWithHostName() {
        BootstrapAddress a = BootstrapAddress.parse("eth0:node-7.cluster.local:5000", null,
                hosts("node-7.cluster.local", "10.0.0.7"));
        assertEquals("eth0", a.interfacePrefix());
        assertEquals("node-7.cluster.local", a.host());
        assertEquals("10.0.0.7:5000", a.toString());
    }

    @Test
    void realLocalhostResolves() {
        BootstrapAddress a = BootstrapAddress.parse("localhost:5000");
        assertTrue(a.address().isLoopbackAddress(), a.toString());
        assertEquals("localhost", a.host());
        assertEquals(5000, a.socketAddress().getPort());
    }

    @Test
    void unresolvableHostIsInvalidUsageNamingTheString() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> BootstrapAddress.parse("nosuch:5000", null, hosts("node7", "10.0.0.7")));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("address", e.phase());
        assertTrue(e.detail().contains("'nosuch:5000'"), e.detail());
        assertTrue(e.detail().contains("'nosuch'"), e.detail());
        assertInstanceOf(UnknownHostException.class, e.getCause());
    }

    // ---- refused ----

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "\t"})
    void emptyIsRefused(String text) {
        assertInvalid(text, NO_DNS, null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.1", "10.0.0.1:", "eth0:10.0.0.1:", "[::1]", "[::1]:", "ib0:[::1]", "node7",
            "[fe80::1%7]"})
    void missingPortIsRefused(String text) {
        assertInvalid(text, NO_DNS, null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:99999", "10.0.0.1:100000", "10.0.0.1:-1",
            "10.0.0.1:+80", "10.0.0.1:8o", "10.0.0.1:080", "10.0.0.1:00", "10.0.0.1: 80", "10.0.0.1:80 0", "[::1]:0", "[::1]:70000", "[::1]:x",
            "[::1]:50:00", "eth0:10.0.0.1:0"})
    void badPortIsRefused(String text) {
        assertInvalid(text, NO_DNS, null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"[fe80::1]:5000", "eth0:[fe80::1]:5000", "[FE80::a:b]:80", "[febf::1]:80"})
    void linkLocalWithoutScopeIsRefused(String text) {
        assertInvalid(text, NO_DNS, null);
        JmscclppException e = assertThrows(JmscclppException.class, () -> literal(text));
        assertTrue(e.detail().contains("link-local") && e.detail().contains("scope"), e.detail());
    }

    @Test
    void portRangeIsInTheMessage() {
        JmscclppException e = assertThrows(JmscclppException.class, () -> literal("10.0.0.1:65536"));
        assertTrue(e.detail().contains("65536") && e.detail().contains("1..65535"), e.detail());
    }

    @ParameterizedTest
    @ValueSource(strings = {":5000", "eth0::5000", ":10.0.0.1:5000", "fe80::1:5000", "a:b:c:d", "1.2.3:80",
            "256.1.1.1:80", "010.0.0.1:80", "10.0.0.1.5:80", "10..0.1:80", "1.2.3.4.:80", "[10.0.0.1]:80",
            "[::1]5000", "[::1:80", "::1]:80", "x[::1]:80", "[[::1]]:80", "[::1]]:80", "[fe80::1%]:80",
            "[gggg::1]:80", "[]:80", "[1:2:3:4:5:6:7:8:9]:80", "[fe80::1%nosuchif0]:80", "[::ffff:10.0.0.1%2]:80",
            "bad host:80", "eth 0:10.0.0.1:80", "-node:80", "node/7:80", "eth0:[::1]:80:1", "[fe80::1%eth 0]:80",
            "=:10.0.0.1:80"})
    void junkIsRefused(String text) {
        assertInvalid(text, NO_DNS, null);
    }

    // ---- ipText ----

    @Test
    void ipTextCompressesTheLongestZeroRun() {
        List<String[]> cases = List.of(
                new String[] {"0:0:0:0:0:0:0:0", "::"},
                new String[] {"0:0:0:0:0:0:0:1", "::1"},
                new String[] {"1:0:0:0:0:0:0:0", "1::"},
                new String[] {"1:0:0:1:0:0:0:1", "1:0:0:1::1"},
                new String[] {"1:0:0:1:1:0:0:1", "1::1:1:0:0:1"},
                new String[] {"1:0:1:1:1:1:1:1", "1:0:1:1:1:1:1:1"},
                new String[] {"2001:DB8:0:0:0:FF00:42:8329", "2001:db8::ff00:42:8329"},
                new String[] {"fe80:0:0:0:fc:ff:fe00:1", "fe80::fc:ff:fe00:1"});
        for (String[] c : cases) {
            assertEquals(c[1], BootstrapAddress.ipText(InetAddress.ofLiteral(c[0])), c[0]);
        }
        assertEquals("10.1.2.3", BootstrapAddress.ipText(InetAddress.ofLiteral("10.1.2.3")));
    }

    @Test
    void ipTextRoundTripsRandomAddresses() {
        SplittableRandom rnd = new SplittableRandom(20250101L);
        for (int n = 0; n < 2000; n++) {
            byte[] b = new byte[16];
            for (int g = 0; g < 8; g++) {
                int v = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(0x10000);
                b[2 * g] = (byte) (v >>> 8);
                b[2 * g + 1] = (byte) v;
            }
            InetAddress a;
            try {
                a = InetAddress.getByAddress(b);
            } catch (UnknownHostException e) {
                throw new AssertionError(e);
            }
            if (!(a instanceof Inet6Address)) {
                continue;
            }
            String text = BootstrapAddress.ipText(a);
            assertArrayEquals(b, InetAddress.ofLiteral(text).getAddress(), text);
            assertEquals(text.toLowerCase(java.util.Locale.ROOT), text);
            assertTrue(!text.contains(":::") && text.indexOf("::") == text.lastIndexOf("::"), text);
        }
    }
}
