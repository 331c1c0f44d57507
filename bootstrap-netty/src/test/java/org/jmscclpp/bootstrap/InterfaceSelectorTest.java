package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.jmscclpp.bootstrap.InterfaceSelector.Family;
import org.jmscclpp.bootstrap.InterfaceSelector.IfAddress;
import org.jmscclpp.bootstrap.InterfaceSelector.NetIf;
import org.jmscclpp.bootstrap.InterfaceSelector.Selected;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.RecordingHandler;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class InterfaceSelectorTest {

    /** Address from text: {@code "10.0.0.1"}, {@code "fe80::1%4"} (numeric scope). */
    private static InetAddress ip(String text) {
        int percent = text.indexOf('%');
        if (percent < 0) {
            return InetAddress.ofLiteral(text);
        }
        try {
            return Inet6Address.getByAddress(null, InetAddress.ofLiteral(text.substring(0, percent)).getAddress(),
                    Integer.parseInt(text.substring(percent + 1)));
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    /** {@code "10.0.0.1/24"} or {@code "fe80::1%4/64"}. */
    private static IfAddress addr(String cidr) {
        int slash = cidr.lastIndexOf('/');
        return new IfAddress(ip(cidr.substring(0, slash)), Integer.parseInt(cidr.substring(slash + 1)));
    }

    private static NetIf up(String name, String... cidrs) {
        return new NetIf(name, true, name.startsWith("lo"), Arrays.stream(cidrs).map(InterfaceSelectorTest::addr).toList());
    }

    private static NetIf down(String name, String... cidrs) {
        return new NetIf(name, false, false, Arrays.stream(cidrs).map(InterfaceSelectorTest::addr).toList());
    }

    private static InterfaceSelector selector(@Nullable String spec, @Nullable String family, NetIf... ifs) {
        List<NetIf> list = List.of(ifs);
        return new InterfaceSelector(spec, InterfaceSelector.IFNAME_ENV, family, () -> list);
    }

    private static InterfaceSelector selector(NetIf... ifs) {
        return selector(null, null, ifs);
    }

    private static final NetIf LO = up("lo", "::1/128", "127.0.0.1/8");
    private static final NetIf DOCKER0 = up("docker0", "172.17.0.1/16");
    private static final NetIf VIRBR0 = up("virbr0", "192.168.122.1/24");
    private static final NetIf ETH0 = up("eth0", "fe80::fc:ff:fe00:1%4/64", "fd00::2/64", "10.0.0.5/24");
    private static final NetIf ETH1 = up("eth1", "192.168.1.5/24");
    private static final NetIf IB0 = up("ib0", "10.1.0.7/16");

    // ---- candidates ----

    @Test
    void candidatesKeepEnumerationOrderAndSkipDownEmptyAndRepeatedInterfaces() {
        InterfaceSelector s = selector(LO, down("eth9", "10.9.0.1/24"), up("dummy0"), ETH1,
                up("eth1", "192.168.2.5/24"), DOCKER0);
        List<String> names = s.candidates().stream().map(Selected::name).toList();
        assertEquals(List.of("lo", "eth1", "docker0"), names);
        assertEquals(ip("192.168.1.5"), s.candidates().get(1).address(), "the first eth1 wins");
    }

    @Test
    void ipv4IsPreferredThenGlobalIpv6ThenLinkLocal() {
        assertEquals(ip("10.0.0.5"), selector(ETH0).candidates().getFirst().address());
        assertEquals(ip("fd00::2"), selector(null, "AF_INET6", ETH0).candidates().getFirst().address());
        NetIf linkLocalOnly = up("eth2", "fe80::2%5/64");
        Selected c = selector(null, "AF_INET6", linkLocalOnly).candidates().getFirst();
        assertEquals(ip("fe80::2%5"), c.address());
        assertEquals(64, c.prefixLength());
        NetIf globalAfterLinkLocal = up("eth3", "fe80::3%6/64", "2001:db8::3/64", "2001:db8::4/64");
        assertEquals(ip("2001:db8::3"), selector(globalAfterLinkLocal).candidates().getFirst().address());
    }

    @Test
    void familyFiltersCandidates() {
        NetIf v6only = up("eth2", "fd00::9/64");
        assertEquals(List.of("eth1"), names(selector(null, "AF_INET", ETH1, v6only).candidates()));
        assertEquals(List.of("eth2"), names(selector(null, "AF_INET6", ETH1, v6only).candidates()));
        assertEquals(List.of("eth1", "eth2"), names(selector(ETH1, v6only).candidates()));
    }

    @Test
    void ipv6LoopbackIsNeverACandidate() {
        assertEquals(List.of(), selector(null, "AF_INET6", LO).candidates());
        assertEquals(ip("127.0.0.1"), selector(LO).candidates().getFirst().address());
        assertEquals(List.of(), selector(up("lo", "::1/128")).candidates());
    }

    // ---- with an interface list ----

    @Test
    void listPicksTheFirstMatchInEnumerationOrder() {
        Selected s = selector("eth", null, DOCKER0, ETH1, ETH0).select(null);
        assertEquals("eth1", s.name());
        assertEquals(ip("192.168.1.5"), s.address());
        assertEquals(24, s.prefixLength());
        assertEquals("MSCCLPP_SOCKET_IFNAME=eth", s.rule());
    }

    @Test
    void listForms() {
        NetIf[] all = {LO, DOCKER0, ETH0, ETH1, IB0};
        assertEquals("eth0", selector("=eth0", null, all).select(null).name());
        assertEquals("eth1", selector("=eth1", null, all).select(null).name());
        assertEquals("eth0", selector("^docker,lo", null, all).select(null).name());
        assertEquals("lo", selector("^=docker0,eth0,eth1,ib0", null, all).select(null).name());
        assertEquals("eth0", selector("ib,eth", null, all).select(null).name(),
                "a list keeps enumeration order, not list order");
    }

    @Test
    void listThatMatchesNothingUsableIsInvalidUsageNamingListAndCandidates() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> selector("=eth9", null, LO, ETH1, down("eth9", "10.9.0.1/24")).select(null));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("interface", e.phase());
        assertTrue(e.detail().contains("MSCCLPP_SOCKET_IFNAME '=eth9'"), e.detail());
        assertTrue(e.detail().contains("lo 127.0.0.1/8"), e.detail());
        assertTrue(e.detail().contains("eth1 192.168.1.5/24"), e.detail());

        JmscclppException wrongFamily = assertThrows(JmscclppException.class,
                () -> selector("eth1", "AF_INET6", ETH1).select(null));
        assertEquals(ErrorCode.INVALID_USAGE, wrongFamily.code());
        assertTrue(wrongFamily.detail().contains("AF_INET6"), wrongFamily.detail());

        // lo named for IPv6: its ::1 is never a candidate, and the message says so and what to do instead
        JmscclppException loopback6 = assertThrows(JmscclppException.class,
                () -> selector("lo", "AF_INET6", up("lo", "127.0.0.1/8", "::1/128"), up("eth0", "fd00::2/64"))
                        .select(null));
        assertEquals(ErrorCode.INVALID_USAGE, loopback6.code());
        assertTrue(loopback6.detail().contains("available: eth0 fd00::2/64; lo's IPv6 address is the loopback ::1")
                && loopback6.detail().contains("MSCCLPP_COMM_ID=[::1]:PORT"), loopback6.detail());
        assertTrue(!wrongFamily.detail().contains("loopback"), wrongFamily.detail());
    }

    @Test
    void aListThatMatchesNothingIsAnErrorEvenWhereAnExplicitRootAddressDecides() {
        selector(LO, ETH1).requireListMatches();
        selector("eth", null, LO, ETH1).requireListMatches();
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> selector("nosuch0", null, LO, ETH1).requireListMatches());
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.detail().contains("MSCCLPP_SOCKET_IFNAME 'nosuch0' matches no usable interface"), e.detail());

        // end to end: a loopback root address does not consult the list, yet the typo is reported
        TcpBootstrap b = TcpBootstrap.create(0, 1, BootstrapOptions.builder().socketIfname("nosuch0").build());
        try {
            JmscclppException init = assertThrows(JmscclppException.class,
                    () -> b.initialize("127.0.0.1:1").block(java.time.Duration.ofSeconds(30)));
            assertEquals(ErrorCode.INVALID_USAGE, init.code());
            assertTrue(init.detail().contains("'nosuch0'"), init.detail());
        } finally {
            b.close();
        }
    }

    @Test
    void invalidListFailsAtConstruction() {
        JmscclppException e = assertThrows(JmscclppException.class, () -> selector("=", null, LO));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
    }

    @Test
    void withIfnameReplacesTheListAndNamesItsSource() {
        InterfaceSelector base = selector(LO, ETH0, ETH1);
        assertEquals("eth0", base.select(null).name());
        InterfaceSelector narrowed = base.withIfname("eth1", "bootstrap address 'eth1:10.0.0.1:5000'");
        assertEquals("eth1", narrowed.select(null).name());
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> base.withIfname("ib", "bootstrap address 'ib:10.0.0.1:5000'").select(null));
        assertTrue(e.detail().startsWith("bootstrap address 'ib:10.0.0.1:5000' 'ib' matches no usable interface"),
                e.detail());
    }

    // ---- default order ----

    @Test
    void ibComesFirst() {
        Selected s = selector(LO, ETH0, DOCKER0, IB0).select(null);
        assertEquals("ib0", s.name());
        assertEquals("prefix ib", s.rule());
    }

    @Test
    void ibBeatsTheHintsSubnet() {
        assertEquals("ib0", selector(ETH1, IB0).select(ip("192.168.1.77")).name());
    }

    @Test
    void hintPicksTheInterfaceInItsSubnet() {
        Selected s = selector(LO, ETH0, ETH1).select(ip("192.168.1.77"));
        assertEquals("eth1", s.name());
        assertEquals("subnet of 192.168.1.77", s.rule());
        assertEquals("eth0", selector(LO, ETH0, ETH1).select(null).name());
        assertEquals("eth0", selector(LO, ETH0, ETH1).select(ip("172.31.0.1")).name(), "no subnet match");
    }

    @Test
    void hintOfAnotherFamilyThanAskedForIsIgnored() {
        NetIf dual = up("eth2", "192.168.1.9/24", "fd00::9/64");
        NetIf v6 = up("eth3", "fd00:1::3/64");
        Selected s = selector(null, "AF_INET6", v6, dual).select(ip("192.168.1.77"));
        assertEquals("eth3", s.name());
        assertEquals("eth2", selector(null, "AF_INET6", v6, dual).select(ip("fd00::1")).name());
    }

    @Test
    void virtualInterfacesComeLastInNcclOrder() {
        Selected s = selector(LO, DOCKER0, VIRBR0, up("enp1s0", "10.2.0.2/24")).select(null);
        assertEquals("enp1s0", s.name());
        assertEquals("not docker/lo/virbr", s.rule());
        assertEquals("docker0", selector(VIRBR0, LO, DOCKER0).select(null).name());
        assertEquals("lo", selector(VIRBR0, LO).select(null).name());
        assertEquals("prefix lo", selector(VIRBR0, LO).select(null).rule());
        assertEquals("virbr0", selector(VIRBR0).select(null).name());
    }

    @Test
    void noCandidateIsSystemError() {
        for (InterfaceSelector s : List.of(selector(), selector(down("eth0", "10.0.0.1/24")),
                selector(null, "AF_INET6", ETH1, LO), selector(up("eth5")))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> s.select(null));
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertEquals("interface", e.phase());
            assertTrue(e.detail().startsWith("no usable network interface"), e.detail());
        }
    }

    // ---- subnet ----

    @Test
    void sameSubnetIpv4() {
        assertTrue(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 24, ip("10.0.0.200")));
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 24, ip("10.0.1.5")));
        assertTrue(InterfaceSelector.sameSubnet(ip("10.0.16.1"), 20, ip("10.0.31.255")));
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.16.1"), 20, ip("10.0.32.1")));
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.16.1"), 20, ip("10.0.15.1")));
        assertTrue(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 32, ip("10.0.0.5")));
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 32, ip("10.0.0.4")));
        assertTrue(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 0, ip("200.1.2.3")));
        assertTrue(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 1, ip("127.255.0.0")));
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 1, ip("128.0.0.0")));
    }

    @Test
    void sameSubnetNeverCrossesFamilies() {
        assertFalse(InterfaceSelector.sameSubnet(ip("10.0.0.5"), 0, ip("::1")));
        assertFalse(InterfaceSelector.sameSubnet(ip("fd00::2"), 0, ip("10.0.0.5")));
    }

    @Test
    void sameSubnetIpv6() {
        assertTrue(InterfaceSelector.sameSubnet(ip("fd00::2"), 64, ip("fd00::ffff:1")));
        assertFalse(InterfaceSelector.sameSubnet(ip("fd00::2"), 64, ip("fd00:0:0:1::2")));
        assertTrue(InterfaceSelector.sameSubnet(ip("2001:db8::1"), 48, ip("2001:db8:0:ffff::1")));
        assertFalse(InterfaceSelector.sameSubnet(ip("2001:db8::1"), 48, ip("2001:db8:1::1")));
        assertTrue(InterfaceSelector.sameSubnet(ip("fd00::2%4"), 64, ip("fd00::3")), "global addresses ignore scope");
    }

    @Test
    void linkLocalSubnetNeedsTheSameScope() {
        assertTrue(InterfaceSelector.sameSubnet(ip("fe80::1%4"), 64, ip("fe80::2%4")));
        assertFalse(InterfaceSelector.sameSubnet(ip("fe80::1%4"), 64, ip("fe80::2%5")));
        assertFalse(InterfaceSelector.sameSubnet(ip("fe80::1%4"), 64, ip("fe80::2")));
    }

    @Test
    void findBySubnetReturnsTheMatchingAddressNotThePreferredOne() {
        NetIf multi = up("eth2", "10.3.0.2/24", "192.168.7.2/24");
        Selected s = selector(LO, ETH0, multi).findBySubnet(ip("192.168.7.100")).orElseThrow();
        assertEquals("eth2", s.name());
        assertEquals(ip("192.168.7.2"), s.address());
        assertEquals("subnet of 192.168.7.100", s.rule());
    }

    @Test
    void findBySubnetIpv6AndScope() {
        assertEquals("eth0", selector(LO, ETH0).findBySubnet(ip("fd00::77")).orElseThrow().name());
        Selected ll = selector(LO, ETH0).findBySubnet(ip("fe80::9%4")).orElseThrow();
        assertEquals("eth0", ll.name());
        assertEquals(ip("fe80::fc:ff:fe00:1%4"), ll.address());
        assertTrue(selector(LO, ETH0).findBySubnet(ip("fe80::9%7")).isEmpty());
    }

    @Test
    void loopbackRootGetsLo() {
        assertEquals("lo", selector(ETH0, LO).findBySubnet(ip("127.0.0.1")).orElseThrow().name());
        Selected v6 = selector(ETH0, LO).findBySubnet(ip("::1")).orElseThrow();
        assertEquals("lo", v6.name());
        assertEquals(ip("::1"), v6.address());
        NetIf narrowLo = up("lo", "127.0.0.1/32");
        Selected other = selector(ETH0, narrowLo).findBySubnet(ip("127.0.0.5")).orElseThrow();
        assertEquals("lo", other.name());
        assertEquals(ip("127.0.0.1"), other.address());
        assertEquals("loopback for 127.0.0.5", other.rule());
    }

    @Test
    void findBySubnetIgnoresListAndFamilyButNotDownInterfaces() {
        assertEquals("eth1", selector("ib", "AF_INET6", ETH1, IB0).findBySubnet(ip("192.168.1.1")).orElseThrow().name());
        assertTrue(selector(down("eth1", "192.168.1.5/24")).findBySubnet(ip("192.168.1.1")).isEmpty());
    }

    @Test
    void selectBySubnetFailsNamingTheRemote() {
        assertEquals("eth1", selector(LO, ETH1).selectBySubnet(ip("192.168.1.1")).name());
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> selector(LO, ETH1).selectBySubnet(ip("172.20.0.1")));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
        assertEquals("interface", e.phase());
        assertTrue(e.detail().contains("172.20.0.1"), e.detail());
        assertTrue(e.detail().contains("eth1"), e.detail());
    }

    // ---- misc ----

    @Test
    void familyParsing() {
        assertEquals(Family.ANY, Family.parse(null));
        assertEquals(Family.ANY, Family.parse(" "));
        assertEquals(Family.INET, Family.parse("AF_INET"));
        assertEquals(Family.INET6, Family.parse(" AF_INET6 "));
        JmscclppException e = assertThrows(JmscclppException.class, () -> Family.parse("inet6"));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.detail().contains("'inet6'"), e.detail());
    }

    @Test
    void enumerationIsReadOnEverySelection() {
        AtomicInteger calls = new AtomicInteger();
        List<NetIf> current = new ArrayList<>(List.of(ETH0));
        InterfaceSelector s = new InterfaceSelector(null, InterfaceSelector.IFNAME_ENV, null, () -> {
            calls.incrementAndGet();
            return List.copyOf(current);
        });
        assertEquals("eth0", s.select(null).name());
        current.addFirst(IB0);
        assertEquals("ib0", s.select(null).name());
        assertEquals(2, calls.get());
    }

    @Test
    void eachDistinctSelectionIsAnnouncedOnceAtInfoThenAtDebug() {
        // names unique to this test run: announcements are remembered for the whole JVM
        String tag = Long.toString(System.nanoTime() % 100000);
        NetIf eth = up("eth" + tag, "192.168.1.5/24");
        NetIf other = up("en" + tag, "172.16.3.9/24");
        Logger jul = Logger.getLogger(InterfaceSelector.class.getName());
        java.util.logging.Level before = jul.getLevel();
        RecordingHandler h = new RecordingHandler();
        jul.setLevel(java.util.logging.Level.ALL);
        jul.addHandler(h);
        try {
            selector(LO, eth).select(null);
            assertEquals(1, h.records().size());
            assertEquals(Level.INFO, h.records().getFirst().getLevel());
            assertTrue(h.records().getFirst().getMessage().contains("eth" + tag + " 192.168.1.5/24"),
                    h.records().getFirst().getMessage());
            selector(LO, eth).select(null);
            assertEquals(2, h.records().size());
            assertEquals(Level.FINE, h.records().get(1).getLevel(), "the same choice again is not announced twice");
            selector(LO, other).select(null);
            assertEquals(3, h.records().size());
            assertEquals(Level.INFO, h.records().get(2).getLevel(), "a different choice is announced");
            selector(LO).findBySubnet(ip("10.0.0.1"));
            assertEquals(3, h.records().size(), "nothing found, nothing logged");
        } finally {
            jul.removeHandler(h);
            jul.setLevel(before);
        }
    }

    // ---- this machine ----

    @Test
    void realInterfacesOfThisMachine() {
        List<NetIf> all = InterfaceSelector.systemInterfaces();
        assumeTrue(all.stream().anyMatch(n -> n.name().equals("lo") && n.up()), "this machine has no running 'lo': " + all);
        NetIf lo = all.stream().filter(n -> n.name().equals("lo")).findFirst().orElseThrow();
        assertTrue(lo.loopback());
        assertTrue(lo.addresses().stream().anyMatch(a -> a.address().equals(ip("127.0.0.1")) && a.prefixLength() == 8),
                lo.addresses().toString());

        InterfaceSelector real = new InterfaceSelector(null, InterfaceSelector.IFNAME_ENV, null,
                InterfaceSelector::systemInterfaces);
        Selected chosen = real.select(null);
        NetIf owner = all.stream().filter(n -> n.name().equals(chosen.name())).findFirst().orElseThrow();
        assertTrue(owner.up());
        assertTrue(owner.addresses().stream().anyMatch(a -> a.address().equals(chosen.address())),
                chosen + " is not an address of " + owner);

        Selected byLoopback = real.findBySubnet(ip("127.0.0.1")).orElseThrow();
        assertEquals("lo", byLoopback.name());
        assertInstanceOf(Inet4Address.class, byLoopback.address());

        Selected exact = new InterfaceSelector("=lo", InterfaceSelector.IFNAME_ENV, "AF_INET",
                InterfaceSelector::systemInterfaces).select(null);
        assertEquals("lo", exact.name());
        assertEquals(ip("127.0.0.1"), exact.address());
    }

    @Test
    void realGlobalIpv6AddressesCarryNoScope() {
        for (NetIf n : InterfaceSelector.systemInterfaces()) {
            for (IfAddress a : n.addresses()) {
                if (a.address() instanceof Inet6Address a6 && !a6.isLinkLocalAddress()) {
                    assertEquals(0, a6.getScopeId(), n.name() + " " + a);
                    assertFalse(a.toString().contains("%"), a.toString());
                }
            }
        }
    }

    @Test
    void aPeersLinkLocalAddressIsDialledThroughTheInterfaceThisRankListensOn() {
        InetSocketAddress peer = new InetSocketAddress(ip("fe80::b%7"), 4000);
        assertEquals(new InetSocketAddress(ip("fe80::b%3"), 4000), InterfaceSelector.reachableFrom(peer, ip("fe80::a%3")));
        // not on a link-local job, or not a link-local peer: as published
        assertEquals(peer, InterfaceSelector.reachableFrom(peer, ip("fd00::2")));
        InetSocketAddress global = new InetSocketAddress(ip("fd00::3"), 4000);
        assertEquals(global, InterfaceSelector.reachableFrom(global, ip("fe80::a%3")));
        InetSocketAddress v4 = new InetSocketAddress(ip("10.0.0.2"), 4000);
        assertEquals(v4, InterfaceSelector.reachableFrom(v4, ip("fe80::a%3")));
    }

    private static List<String> names(List<Selected> list) {
        return list.stream().map(Selected::name).toList();
    }
}
