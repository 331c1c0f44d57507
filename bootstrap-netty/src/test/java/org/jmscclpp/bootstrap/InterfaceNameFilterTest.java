package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class InterfaceNameFilterTest {

    private static void assertMatches(InterfaceNameFilter f, String... names) {
        for (String n : names) {
            assertTrue(f.matches(n), "'" + f.spec() + "' should match " + n);
        }
    }

    private static void assertRejects(InterfaceNameFilter f, String... names) {
        for (String n : names) {
            assertFalse(f.matches(n), "'" + f.spec() + "' should not match " + n);
        }
    }

    @Test
    void singlePrefix() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("eth");
        assertFalse(f.isExclude());
        assertFalse(f.isExact());
        assertEquals(List.of("eth"), f.names());
        assertMatches(f, "eth", "eth0", "eth1", "ethernet7");
        assertRejects(f, "ib0", "veth0", "lo", "et", "ETH0");
    }

    @Test
    void prefixList() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("eth0,ib");
        assertEquals(List.of("eth0", "ib"), f.names());
        assertMatches(f, "eth0", "eth01", "ib0", "ib1", "ibp3s0");
        assertRejects(f, "eth1", "eth", "lo", "mlx_ib0");
    }

    @Test
    void excludeList() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("^docker,lo");
        assertTrue(f.isExclude());
        assertFalse(f.isExact());
        assertEquals(List.of("docker", "lo"), f.names());
        assertMatches(f, "eth0", "ib0", "virbr0", "enp1s0");
        assertRejects(f, "docker0", "docker_gwbridge", "lo", "lo0");
    }

    @Test
    void exactList() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("=eth0");
        assertTrue(f.isExact());
        assertFalse(f.isExclude());
        assertMatches(f, "eth0");
        assertRejects(f, "eth01", "eth1", "eth", "veth0");

        InterfaceNameFilter two = InterfaceNameFilter.parse("=eth0,eth1");
        assertMatches(two, "eth0", "eth1");
        assertRejects(two, "eth2", "eth10");
    }

    @Test
    void exactExcludeList() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("^=docker0");
        assertTrue(f.isExclude());
        assertTrue(f.isExact());
        assertMatches(f, "docker1", "docker01", "eth0", "lo");
        assertRejects(f, "docker0");
    }

    @Test
    void portSuffixesAreDropped() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("eth0:1234,ib0:5");
        assertEquals(List.of("eth0", "ib0"), f.names());
        assertMatches(f, "eth0", "ib0");
        InterfaceNameFilter exact = InterfaceNameFilter.parse("=mlx5_0:1");
        assertMatches(exact, "mlx5_0");
        assertRejects(exact, "mlx5_0:1", "mlx5_01");
    }

    @Test
    void emptyEntriesAndRepeatsAreIgnored() {
        InterfaceNameFilter f = InterfaceNameFilter.parse(",eth0,,ib,eth0,");
        assertEquals(List.of("eth0", "ib"), f.names());
        assertMatches(f, "eth0", "ib0");
        assertRejects(f, "eth1");
    }

    @Test
    void whitespaceIsIgnored() {
        InterfaceNameFilter f = InterfaceNameFilter.parse("  eth0 ,\tib  ");
        assertEquals(List.of("eth0", "ib"), f.names());
        InterfaceNameFilter g = InterfaceNameFilter.parse(" ^ = docker0 , lo ");
        assertTrue(g.isExclude());
        assertTrue(g.isExact());
        assertEquals(List.of("docker0", "lo"), g.names());
        assertRejects(g, "docker0", "lo");
        assertMatches(g, "docker1", "lo0");
    }

    @Test
    void specIsKeptAsGiven() {
        InterfaceNameFilter f = InterfaceNameFilter.parse(" ^docker ");
        assertEquals(" ^docker ", f.spec());
        assertEquals(" ^docker ", f.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"^", "^=", "^,", " ^ , "})
    void emptyExcludeListMatchesEverything(String spec) {
        InterfaceNameFilter f = InterfaceNameFilter.parse(spec);
        assertTrue(f.isExclude());
        assertMatches(f, "eth0", "lo", "docker0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", ",", "=", "=,", " , ,", ":1234", "=:5"})
    void includeListWithoutNamesIsInvalidUsage(String spec) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> InterfaceNameFilter.parse(spec));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("interface", e.phase());
        assertTrue(e.detail().contains("'" + spec + "'"), e.getMessage());
    }
}
