package org.jmscclpp.core.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class HostIdentityTest {

    private static final String BOOT_A = "c28b08b3-bbfa-45ef-b879-d13b04e13f00";
    private static final String BOOT_B = "0f6a3d1e-5b2c-4f7d-9a8e-1c2b3d4e5f60";

    @Test
    void hash64IsFirstEightBytesOfSha256LittleEndian() {
        // SHA-256("abc") = ba7816bf 8f01cfea ..., SHA-256("") = e3b0c442 98fc1c14 ...
        assertEquals(0xeacf018fbf1678baL, HostIdentity.hash64("abc"));
        assertEquals(0x141cfc9842c4b0e3L, HostIdentity.hash64(""));
    }

    @Test
    void sameInputsGiveSameHostHash() {
        assertEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node1", BOOT_A, null));
    }

    @Test
    void bootIdNewlineFromProcDoesNotMatter() {
        assertEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node1", BOOT_A + "\n", null));
    }

    @Test
    void differentBootIdGivesDifferentHostHash() {
        assertNotEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node1", BOOT_B, null));
    }

    @Test
    void differentHostNameGivesDifferentHostHash() {
        assertNotEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node2", BOOT_A, null));
    }

    @Test
    void partsAreSeparatedSoShiftedBoundariesDiffer() {
        assertNotEquals(HostIdentity.hostHash("ab", "c", null), HostIdentity.hostHash("a", "bc", null));
    }

    @Test
    void missingBootIdCountsAsEmpty() {
        assertEquals(HostIdentity.hostHash("node1", "", null), HostIdentity.hostHash("node1", null, null));
        assertNotEquals(HostIdentity.hostHash("node1", null, null), HostIdentity.hostHash("node1", BOOT_A, null));
    }

    @Test
    void hostIdEnvOverridesHostNameAndBootId() {
        long a = HostIdentity.hostHash("node1", BOOT_A, "rack7-host3");
        long b = HostIdentity.hostHash("node2", BOOT_B, "rack7-host3");
        assertEquals(a, b);
        assertEquals(HostIdentity.hash64("rack7-host3"), a);
        assertNotEquals(a, HostIdentity.hostHash("node1", BOOT_A, "rack7-host4"));
        assertNotEquals(a, HostIdentity.hostHash("node1", BOOT_A, null));
    }

    @Test
    void blankHostIdEnvIsIgnored() {
        assertEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node1", BOOT_A, "  "));
        assertEquals(HostIdentity.hostHash("node1", BOOT_A, null), HostIdentity.hostHash("node1", BOOT_A, ""));
    }

    @Test
    void hostIdEnvEqualToConcatenatedInputsDoesNotCollide() {
        assertNotEquals(HostIdentity.hostHash("node1", BOOT_A, null),
                HostIdentity.hostHash("x", "y", "node1" + BOOT_A));
    }

    @Test
    void pidHashDependsOnPidAndNamespace() {
        String ns = "pid:[4026531836]";
        assertEquals(HostIdentity.pidHash(42, ns), HostIdentity.pidHash(42, ns));
        assertNotEquals(HostIdentity.pidHash(42, ns), HostIdentity.pidHash(43, ns));
        assertNotEquals(HostIdentity.pidHash(42, ns), HostIdentity.pidHash(42, "pid:[4026532001]"));
        assertEquals(HostIdentity.pidHash(42, ""), HostIdentity.pidHash(42, null));
    }

    @Test
    void realHostHashIsTheHashOfThisHostsInputs() {
        long expected = HostIdentity.hostHash(HostIdentity.hostName(), HostIdentity.bootId(),
                System.getenv(HostIdentity.HOST_ID_ENV));
        assertEquals(expected, HostIdentity.hostHash());
        assertEquals(HostIdentity.hostHash(), HostIdentity.hostHash());
    }

    @Test
    void realPidHashIsTheHashOfThisProcessesInputs() {
        long expected = HostIdentity.pidHash(ProcessHandle.current().pid(), HostIdentity.pidNamespace());
        assertEquals(expected, HostIdentity.pidHash());
        assertNotEquals(HostIdentity.hostHash(), HostIdentity.pidHash());
    }

    @Test
    void linuxInputsAreRead() {
        assumeTrue(Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id")),
                "no /proc/sys/kernel/random/boot_id on this system");
        String bootId = HostIdentity.bootId();
        assertNotNull(bootId);
        assertEquals(36, bootId.strip().length(), "boot id is a UUID: " + bootId);
        String ns = HostIdentity.pidNamespace();
        assertNotNull(ns);
        assertTrue(ns.startsWith("pid:["), ns);
        assertTrue(!HostIdentity.hostName().isBlank(), "host name is empty");
    }

    @Test
    void everyThreadSeesTheSameCachedValues() throws InterruptedException {
        int n = 16;
        CountDownLatch start = new CountDownLatch(1);
        ConcurrentLinkedQueue<long[]> seen = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                seen.add(new long[] {HostIdentity.hostHash(), HostIdentity.pidHash()});
            }));
        }
        start.countDown();
        for (Thread t : threads) {
            assertTrue(t.join(Duration.ofSeconds(10)), "thread did not finish within 10 s");
        }
        assertEquals(n, seen.size());
        for (long[] v : seen) {
            assertEquals(HostIdentity.hostHash(), v[0]);
            assertEquals(HostIdentity.pidHash(), v[1]);
        }
    }
}
