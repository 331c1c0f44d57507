package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

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
        assertEquals(Optional.of("eth0:10.0.0.1:50000"), e.rootAddress());
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
        assertTrue(e.getMessage().contains("PMIx"), e.getMessage());
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
        assertEquals(Optional.of("[fd00::5]:29500"), e.rootAddress());
    }

    @Test
    void commIdWinsOverMasterAddr() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "node7",
                "MASTER_PORT", "29500", "MSCCLPP_COMM_ID", "10.1.1.1:6000"));
        assertEquals(Optional.of("10.1.1.1:6000"), e.rootAddress());
    }

    @Test
    void torchrunWithCommIdNeedsNoMaster() {
        RankEnvironment e = RankEnvironment.from(Map.of("RANK", "1", "WORLD_SIZE", "3",
                "MSCCLPP_COMM_ID", "10.1.1.1:6000"));
        assertEquals(new RankEnvironment(1, 3, "10.1.1.1:6000", 1), e);
    }

    @Test
    void contradictingLaunchersAreInvalidUsageNamingBoth() {
        JmscclppException e = invalid(Map.of("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "a", "MASTER_PORT", "1",
                "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4"));
        assertTrue(e.getMessage().contains("OMPI_COMM_WORLD_SIZE=4 contradicts WORLD_SIZE=2"), e.getMessage());
        e = invalid(Map.of("JMSCCLPP_RANK", "1", "JMSCCLPP_WORLD_SIZE", "2", "MSCCLPP_COMM_ID", "127.0.0.1:9000",
                "RANK", "0", "WORLD_SIZE", "2"));
        assertTrue(e.getMessage().contains("JMSCCLPP_RANK=1 contradicts RANK=0"), e.getMessage());
    }

    @Test
    void agreeingLaunchersPickTheInnermostAndSlurmIsNotCompared() {
        // mpirun inside an srun allocation: the ranks inherit the Slurm task id of the daemon that started them
        RankEnvironment e = RankEnvironment.from(Map.of("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4",
                "RANK", "3", "WORLD_SIZE", "4", "MSCCLPP_COMM_ID", "127.0.0.1:9000",
                "SLURM_PROCID", "0", "SLURM_NTASKS", "1"));
        assertEquals(new RankEnvironment(3, 4, "127.0.0.1:9000", 3), e);
    }

    @Test
    void openMpiWithPmixSharesTheIdThroughPmix() {
        RankEnvironment e = RankEnvironment.from(Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "PMIX_RANK", "1", "PMIX_NAMESPACE", "988676097"));
        assertEquals(new RankEnvironment(1, 4, 1,
                new RankEnvironment.Rendezvous.LauncherKeyValue("PMIx", RankEnvironment.STORE_KEY)), e);
        assertEquals(Optional.empty(), e.rootAddress());
    }

    @Test
    void commIdOverridesPmix() {
        RankEnvironment e = RankEnvironment.from(Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4",
                "PMIX_RANK", "1", "PMIX_NAMESPACE", "9", "MSCCLPP_COMM_ID", "10.0.0.1:5000"));
        assertEquals(Optional.of("10.0.0.1:5000"), e.rootAddress());
    }

    @Test
    void underTorchrunsAgentTheIdGoesThroughItsStoreUnderAKeyOfThisRunAndRestart() {
        // the variables a real torchrun 2.13 --nproc-per-node=2 gives its worker 1
        Map<String, String> env = Map.of("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                "MASTER_ADDR", "localhost", "MASTER_PORT", "41141", "TORCHELASTIC_USE_AGENT_STORE", "True",
                "TORCHELASTIC_RUN_ID", "8b5af0fd", "TORCHELASTIC_RESTART_COUNT", "2", "GROUP_RANK", "0",
                "LOCAL_WORLD_SIZE", "2");
        RankEnvironment e = RankEnvironment.from(env);
        assertEquals(new RankEnvironment(1, 2, 1, new RankEnvironment.Rendezvous.TorchStore("localhost", 41141,
                "jmscclpp/unique_id/8b5af0fd/2")), e);
        assertTrue(e.rendezvous().describe().contains("torchrun's TCPStore at localhost:41141"));
    }

    @Test
    void slurmConventionWithoutPmixHostsTheRootOnTheFirstNode() {
        Map<String, String> env = new HashMap<>(Map.of("SLURM_PROCID", "5", "SLURM_NTASKS", "8",
                "SLURM_LOCALID", "1", "SLURM_STEP_NODELIST", "gpu[07-10,12],cpu1", "SLURM_JOB_ID", "4242",
                "SLURM_STEP_ID", "3"));
        RankEnvironment e = RankEnvironment.from(env);
        assertEquals(new RankEnvironment(5, 8, "gpu07:" + RankEnvironment.slurmPort(4242, 3), 1), e);
        env.put("PMIX_RANK", "5");
        env.put("PMIX_NAMESPACE", "slurm.pmix.4242.3");
        assertEquals(new RankEnvironment.Rendezvous.LauncherKeyValue("PMIx", RankEnvironment.STORE_KEY),
                RankEnvironment.from(env).rendezvous());
        env.put("MSCCLPP_COMM_ID", "10.2.0.1:7000");
        assertEquals(Optional.of("10.2.0.1:7000"), RankEnvironment.from(env).rootAddress());
    }

    @Test
    void slurmHostListsAndPorts() {
        assertEquals("node1", RankEnvironment.firstHost("node1"));
        assertEquals("node1", RankEnvironment.firstHost("node1,node2"));
        assertEquals("n003", RankEnvironment.firstHost("n[003-005,9]"));
        assertEquals("rack2-n4-ib", RankEnvironment.firstHost("rack2-n[4,6]-ib,other"));
        // several ranges in one name, as scontrol show hostnames expands them: the first of each
        assertEquals("rack1-n01", RankEnvironment.firstHost("rack[1-2]-n[01-04],gpu1"));
        assertEquals("a1b3", RankEnvironment.firstHost("a[1-2]b[3-4]"));
        assertEquals(29_600, RankEnvironment.slurmPort(0, 0));
        assertTrue(RankEnvironment.slurmPort(4242, 0) != RankEnvironment.slurmPort(4242, 1));
        for (long job : new long[] {1, 99_999_999, Integer.MAX_VALUE}) {
            int port = RankEnvironment.slurmPort(job, 7);
            assertTrue(port >= 29_600 && port < 39_600, "port " + port);
        }
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> RankEnvironment.firstHost("n[x-3]")).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> RankEnvironment.firstHost("n[1-3")).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> RankEnvironment.firstHost("r[1-2]n[1-3")).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> RankEnvironment.firstHost("r[1-2]n[x]")).code());
        JmscclppException e = invalid(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2"));
        assertTrue(e.getMessage().contains("SLURM_JOB_NODELIST, SLURM_JOB_ID are not set"), e.getMessage());
        // a federated job's id carries its cluster id in the top bits: above Integer.MAX_VALUE for clusters 32 and up
        Map<String, String> federated = Map.of("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n1",
                "SLURM_JOB_ID", "2214592513", "SLURM_STEP_ID", "4294967290");
        assertEquals(Optional.of("n1:" + RankEnvironment.slurmPort(2_214_592_513L, 4_294_967_290L)),
                RankEnvironment.from(federated).rootAddress());
        e = invalid(Map.of("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n1",
                "SLURM_JOB_ID", "-4"));
        assertTrue(e.getMessage().contains("SLURM_JOB_ID is not a Slurm id"), e.getMessage());
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

    @Test
    void aStoreRendezvousBuiltWithBadValuesIsInvalidUsage() {
        // checked as a root address is: a TorchStore of port 70000 got as far as the join, which ended with a raw
        // IllegalArgumentException from InetSocketAddress
        List<Executable> bad = List.of(
                () -> new RankEnvironment.Rendezvous.TorchStore("node", 70_000, "k"),
                () -> new RankEnvironment.Rendezvous.TorchStore("node", 0, "k"),
                () -> new RankEnvironment.Rendezvous.TorchStore(" ", 29_400, "k"),
                () -> new RankEnvironment.Rendezvous.TorchStore("node", 29_400, ""),
                () -> new RankEnvironment.Rendezvous.LauncherKeyValue("", "k"),
                () -> new RankEnvironment.Rendezvous.LauncherKeyValue("PMIx", " "));
        for (Executable b : bad) {
            JmscclppException e = assertThrows(JmscclppException.class, b);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        }
    }

    private static JmscclppException invalid(Map<String, String> env) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> RankEnvironment.from(env));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e;
    }
}
