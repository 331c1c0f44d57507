package org.jmscclpp.core.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;

/** The set-up check every engine makes: scratch, tag and the engine's own settings the same on every rank. */
class AgreeTest {

    private static final Duration LIMIT = Duration.ofSeconds(30);

    /** Runs agree on two ranks whose settings of {@code name} are {@code values[r]}; returns each rank's error, or null. */
    private static List<Throwable> agreeing(String name, long... values) throws Exception {
        List<InMemoryBootstrap> group = InMemoryBootstrap.group(2);
        List<HostBackend> backends = List.of(HostBackend.open(), HostBackend.open());
        List<Communicator> communicators = new ArrayList<>();
        // a thread per rank: both block in the exchange at once (the common pool may have one thread)
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<CompletableFuture<Throwable>> ranks = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator c = Communicator.create(group.get(r), backends.get(r));
                communicators.add(c);
                SequencedMap<String, Long> settings = new LinkedHashMap<>();
                settings.put(name, values[r]);
                ranks.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        AbstractCollectiveComm.agree(c, 1 << 20, 7, settings, LIMIT, "setup");
                        return null;
                    } catch (JmscclppException e) {
                        return e;
                    }
                }, threads));
            }
            List<Throwable> out = new ArrayList<>();
            for (CompletableFuture<Throwable> f : ranks) {
                out.add(f.get(LIMIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS));
            }
            return out;
        } finally {
            threads.shutdownNow();
            communicators.forEach(Communicator::close);
            group.forEach(InMemoryBootstrap::close);
            backends.forEach(HostBackend::close);
        }
    }

    @Test
    void ranksThatShareTheEngineSettingsAgree() throws Exception {
        assertEquals(java.util.Arrays.asList(null, null), agreeing("jmscclpp.test.blocks", 64, 64));
    }

    @Test
    void aSettingThatDiffersIsInvalidUsageNamingItOnEveryRank() throws Exception {
        List<Throwable> errors = agreeing("jmscclpp.test.blocks", 64, 128);
        for (int r = 0; r < 2; r++) {
            Throwable t = errors.get(r);
            assertTrue(t instanceof JmscclppException j && j.code() == ErrorCode.INVALID_USAGE, String.valueOf(t));
            String m = t.getMessage();
            assertTrue(m.contains("rank " + r + " with jmscclpp.test.blocks=" + (r == 0 ? 64 : 128))
                    && m.contains("rank " + (1 - r) + " with " + (r == 0 ? 128 : 64)), m);
        }
    }
}
