package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two processes (one GPU each where there are two, else both on the one GPU), run as two different
 * non-root users (uids {@value #UID_0} and {@value #UID_1}, started by {@link OtherUser} from a test
 * running as root): VMM buffers are
 * shared over CUDA IPC though neither rank may trace the other, so {@code pidfd_getfd} is refused
 * (each rank checks) and the descriptors come over the exporters' descriptor servers
 * ({@code SCM_RIGHTS}). Aborted with the reason where there is no GPU, the test does
 * not run as root, setpriv is missing, or other users cannot open the GPU's device files.
 */
@Tag("gpu")
class CudaIpcAcrossUsersGpuTest {

    static final int UID_0 = 61_001;
    static final int UID_1 = 61_002;
    private static final Duration JOB_TIMEOUT = Duration.ofSeconds(100);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsAGpuRootAndDeviceFilesForAll() throws IOException {
        GpuJob.assumeGpus(1);
        OtherUser.unavailableReason().ifPresent(Assumptions::abort);
        try (Stream<Path> dev = Files.list(Path.of("/dev"))) {
            // the control file, the unified-memory file and one file per GPU: what cuInit and a context open
            for (Path node : dev.filter(p -> p.getFileName().toString().matches("nvidia(ctl|-uvm|[0-9]+)")).toList()) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(node);
                Assumptions.assumeTrue(perms.contains(PosixFilePermission.OTHERS_READ)
                        && perms.contains(PosixFilePermission.OTHERS_WRITE),
                        "users other than root cannot open " + node + " (" + perms + ")");
            }
        }
    }

    @Test
    void vmmBuffersAreSharedBetweenRanksOfTwoUsersThatPidfdGetfdRefuses() {
        int[] uids = {UID_0, UID_1};
        try (OtherUser users = OtherUser.in(UID_0)) {
            List<String> outputs = GpuJob.run((rank, flags, rankMain, args) ->
                    users.processBuilder(uids[rank], flags, rankMain, args), GpuRankMain.class, 2, JOB_TIMEOUT, logs,
                    "vmm-across-users", "alloc=vmm");
            for (int rank = 0; rank < 2; rank++) {
                String out = outputs.get(rank);
                System.out.print("[vmm-across-users rank " + rank + "]\n" + out);
                assertTrue(out.contains("UID " + uids[rank] + "\n"), "rank " + rank + " ran as another uid:\n" + out);
                assertTrue(out.contains("pidfd_getfd refused, as expected"), out);
                assertTrue(out.contains("OK basic-write CUDA_IPC VMM"), out);
                assertTrue(out.contains("OK vmm-across-users"), out);
            }
        }
    }
}
