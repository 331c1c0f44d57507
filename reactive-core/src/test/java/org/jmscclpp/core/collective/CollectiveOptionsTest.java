package org.jmscclpp.core.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class CollectiveOptionsTest {

    @Test
    void theEnvironmentSetsAlgorithmsAndScratch() {
        CollectiveOptions o = CollectiveOptions.fromEnvironment(Map.of(CollectiveOptions.ALGORITHM_ENV,
                "allreduce:rsag; send:direct", CollectiveOptions.SCRATCH_ENV, "256M"));
        assertEquals(256L << 20, o.scratchBytes());
        assertEquals(Map.of(CollectiveKind.ALL_REDUCE, "rsag", CollectiveKind.SEND, "direct", CollectiveKind.RECV,
                "direct"), o.algorithms());
        assertEquals(CollectiveOptions.defaults(), CollectiveOptions.fromEnvironment(Map.of(
                CollectiveOptions.SCRATCH_ENV, " ", CollectiveOptions.ALGORITHM_ENV, "")));
    }

    @Test
    void aBareAlgorithmNameCoversEveryKind() {
        Map<CollectiveKind, String> all = CollectiveOptions.parseAlgorithms("ll16");
        assertEquals(CollectiveKind.values().length, all.size());
        assertTrue(all.values().stream().allMatch("ll16"::equals), all.toString());
    }

    @Test
    void aBadByteCountIsInvalidUsageNamingTheVariable() {
        for (String bad : new String[] {"", "M", "-1", "0", "1.5G", "12X", "99999999999T", "0x100", "1 G"}) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> CollectiveOptions.fromEnvironment(Map.of(CollectiveOptions.SCRATCH_ENV, bad.isEmpty() ? "B" : bad)),
                    bad);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), bad);
            assertTrue(e.getMessage().contains(CollectiveOptions.SCRATCH_ENV), e.getMessage());
        }
    }

    @Test
    void anAlgorithmPairWithoutANameIsInvalidUsage() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> CollectiveOptions.fromEnvironment(Map.of(CollectiveOptions.ALGORITHM_ENV, "allreduce:")));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains(CollectiveOptions.ALGORITHM_ENV), e.getMessage());
    }
}
