package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class RankEnvironmentTest {

    @Test
    void jmscclppConvention() {
        RankEnvironment e = RankEnvironment.from(Map.of("JMSCCLPP_RANK", "2", "JMSCCLPP_WORLD_SIZE", "4",
                "MSCCLPP_COMM_ID", "10.0.0.1:50000", "JMSCCLPP_LOCAL_RANK", "0"));
        assertEquals(new RankEnvironment(2, 4, "10.0.0.1:50000", 0), e);
    }

    @Test
    void localRankDefaultsToRank() {
        RankEnvironment e = RankEnvironment.from(Map.of("JMSCCLPP_RANK", "3", "JMSCCLPP_WORLD_SIZE", "4",
                "MSCCLPP_COMM_ID", "eth0:10.0.0.1:50000"));
        assertEquals(3, e.localRank());
        assertEquals("eth0:10.0.0.1:50000", e.rootAddress());
    }

    @Test
    void openMpiConvention() {
        RankEnvironment e = RankEnvironment.from(Map.of("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "MSCCLPP_COMM_ID", "[fe80::1]:7000"));
        assertEquals(new RankEnvironment(5, 8, "[fe80::1]:7000", 1), e);
    }

    @Test
    void openMpiWithoutCommIdSaysWhatToSet() {
        JmscclppException e = invalid(Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"));
        assertTrue(e.getMessage().contains("Open MPI"), e.getMessage());
        assertTrue(e.getMessage().contains("MSCCLPP_COMM_ID is not set"), e.getMessage());
    }

    @Test
    void torchrunConvention() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                "MASTER_ADDR", "node7", "MASTER_PORT", "29500"));
        assertEquals(new RankEnvironment(1, 2, "node7:29500", 1), e);
    }

    @Test
    void torchrunIpv6MasterGetsBrackets() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "0", "WORLD_SIZE", "2",
                "MASTER_ADDR", "fd00::5", "MASTER_PORT", "29500"));
        assertEquals("[fd00::5]:29500", e.rootAddress());
    }

    @Test
    void commIdWinsOverMasterAddr() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "node7",
                "MASTER_PORT", "29500", "MSCCLPP_COMM_ID", "10.1.1.1:6000"));
        assertEquals("10.1.1.1:6000", e.rootAddress());
    }

    @Test
    void torchrunWithCommIdNeedsNoMaster() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "1", "WORLD_SIZE", "3",
                "MSCCLPP_COMM_ID", "10.1.1.1:6000"));
        assertEquals(new RankEnvironment(1, 3, "10.1.1.1:6000", 1), e);
    }

    @Test
    void jmscclppWinsOverOtherConventions() {
        RankEnvironment e = RankEnvironment.from(Map.of("JMSCCLPP_RANK", "1", "JMSCCLPP_WORLD_SIZE", "2",
                "MSCCLPP_COMM_ID", "127.0.0.1:9000", "OMPI_COMM_WORLD_RANK", "7", "OMPI_COMM_WORLD_SIZE", "8",
                "RANK", "5", "WORLD_SIZE", "6"));
        assertEquals(new RankEnvironment(1, 2, "127.0.0.1:9000", 1), e);
    }

    @Test
    void emptyEnvironmentNamesTheVariables() {
        JmscclppException e = invalid(Map.of());
        assertTrue(e.getMessage().contains("JMSCCLPP_RANK"), e.getMessage());
        assertTrue(e.getMessage().contains("JMSCCLPP_WORLD_SIZE"), e.getMessage());
        assertTrue(e.getMessage().contains("MSCCLPP_COMM_ID"), e.getMessage());
    }

    @Test
    void missingWorldSizeIsNamed() {
        JmscclppException e = invalid(Map.of("JMSCCLPP_RANK", "0", "MSCCLPP_COMM_ID", "127.0.0.1:9000"));
        assertTrue(e.getMessage().contains("JMSCCLPP_WORLD_SIZE is not set"), e.getMessage());
    }

    @Test
    void torchrunMissingMasterPortIsNamed() {
        JmscclppException e = invalid(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "node7"));
        assertTrue(e.getMessage().contains("MASTER_PORT is not set"), e.getMessage());
    }

    @Test
    void rankOutsideWorldIsRejected() {
        JmscclppException e = invalid(Map.of("JMSCCLPP_RANK", "4", "JMSCCLPP_WORLD_SIZE", "4",
                "MSCCLPP_COMM_ID", "127.0.0.1:9000"));
        assertTrue(e.getMessage().contains("JMSCCLPP_RANK=4 is outside [0, JMSCCLPP_WORLD_SIZE=4)"), e.getMessage());
        invalid(Map.of("RANK", "-1", "WORLD_SIZE", "2", "MASTER_ADDR", "a", "MASTER_PORT", "1"));
        invalid(Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "0", "MSCCLPP_COMM_ID", "a:1"));
    }

    @Test
    void nonNumericValuesAreRejected() {
        JmscclppException e = invalid(Map.of("JMSCCLPP_RANK", "zero", "JMSCCLPP_WORLD_SIZE", "4",
                "MSCCLPP_COMM_ID", "127.0.0.1:9000"));
        assertTrue(e.getMessage().contains("JMSCCLPP_RANK is not an integer: 'zero'"), e.getMessage());
        invalid(Map.of("JMSCCLPP_RANK", "0", "JMSCCLPP_WORLD_SIZE", "4", "JMSCCLPP_LOCAL_RANK", "x",
                "MSCCLPP_COMM_ID", "127.0.0.1:9000"));
    }

    @Test
    void badRootAddressIsRejected() {
        for (String address : new String[] {"127.0.0.1", "127.0.0.1:", ":5000", "host:http", "host:70000", "h:0"}) {
            JmscclppException e = invalid(Map.of("JMSCCLPP_RANK", "0", "JMSCCLPP_WORLD_SIZE", "1",
                    "MSCCLPP_COMM_ID", address));
            assertTrue(e.getMessage().contains("'" + address + "'"), e.getMessage());
        }
        invalid(Map.of("RANK", "0", "WORLD_SIZE", "1", "MASTER_ADDR", "node", "MASTER_PORT", "port"));
    }

    private static JmscclppException invalid(Map<String, String> env) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> RankEnvironment.from(env));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e;
    }
}
