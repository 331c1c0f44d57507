package org.jmscclpp.core.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.jmscclpp.core.log.DebugSettings.DebugLevel;
import org.junit.jupiter.api.Test;

class DebugSettingsTest {

    private static DebugSettings read(Map<String, String> env) {
        return DebugSettings.from(env, "node7", 4242);
    }

    @Test
    void theLevelsAreMscclppsInAnyCaseAndEachShowsWhatTheOnesBeforeShow() {
        assertEquals(DebugLevel.NONE, read(Map.of()).level());
        assertEquals(DebugLevel.VERSION, read(Map.of("MSCCLPP_DEBUG", "version")).level());
        assertEquals(DebugLevel.WARN, read(Map.of("MSCCLPP_DEBUG", "Warn")).level());
        assertEquals(DebugLevel.INFO, read(Map.of("MSCCLPP_DEBUG", "INFO")).level());
        assertEquals(DebugLevel.ABORT, read(Map.of("MSCCLPP_DEBUG", "ABORT")).level());
        assertEquals(DebugLevel.TRACE, read(Map.of("MSCCLPP_DEBUG", "trace")).level());
        assertEquals(Level.OFF, DebugLevel.VERSION.jul);
        assertEquals(Level.WARNING, DebugLevel.WARN.jul);
        assertEquals(Level.INFO, DebugLevel.ABORT.jul);
        assertEquals(Level.ALL, DebugLevel.TRACE.jul);
    }

    @Test
    void anUnknownLevelIsNoneAndRemembered() {
        DebugSettings s = read(Map.of("MSCCLPP_DEBUG", "LOUD"));
        assertEquals(DebugLevel.NONE, s.level());
        assertEquals("LOUD", s.unknown());
        assertEquals("NONE", read(Map.of("MSCCLPP_DEBUG", "NONE")).unknown(), "NONE is no MSCCL++ value");
        assertNull(read(Map.of("MSCCLPP_DEBUG", "INFO")).unknown());
    }

    @Test
    void theSubsystemMaskIsInitByDefaultAListAllOrAnInvertedList() {
        assertEquals(EnumSet.of(Subsystem.INIT), read(Map.of()).mask());
        assertEquals(EnumSet.of(Subsystem.NET, Subsystem.COLL), read(Map.of("MSCCLPP_DEBUG_SUBSYS", "net,COLL")).mask());
        assertEquals(EnumSet.allOf(Subsystem.class), read(Map.of("MSCCLPP_DEBUG_SUBSYS", "ALL")).mask());
        assertEquals(EnumSet.complementOf(EnumSet.of(Subsystem.NET, Subsystem.SHM)),
                read(Map.of("MSCCLPP_DEBUG_SUBSYS", "^NET,SHM")).mask());
        assertEquals(EnumSet.of(Subsystem.INIT, Subsystem.P2P),
                read(Map.of("MSCCLPP_DEBUG_SUBSYS", "BOOTSTRAP,P2P,NOSUCH")).mask(), "BOOTSTRAP is INIT; unknown ignored");
    }

    @Test
    void namesThatAreNoSubsystemAreListedForTheWarning() {
        assertEquals(List.of("NOSUCH", "garbage"),
                read(Map.of("MSCCLPP_DEBUG_SUBSYS", "^BOOTSTRAP, all,NOSUCH,net,garbage,")).unknownSubsystems());
        assertEquals(List.of(), read(Map.of("MSCCLPP_DEBUG_SUBSYS", "ALL")).unknownSubsystems());
        assertEquals(List.of(), read(Map.of()).unknownSubsystems());
    }

    @Test
    void theFileExpandsHostAndPidAndCountsOnlyAboveVersion() {
        assertEquals("/tmp/d.node7.4242.%x%.log",
                read(Map.of("MSCCLPP_DEBUG", "INFO", "MSCCLPP_DEBUG_FILE", "/tmp/d.%h.%p.%x%%.log")).file());
        assertNull(read(Map.of("MSCCLPP_DEBUG", "VERSION", "MSCCLPP_DEBUG_FILE", "/tmp/d.log")).file());
        assertNull(read(Map.of("MSCCLPP_DEBUG_FILE", "/tmp/d.log")).file());
        assertEquals("/tmp/d%", DebugSettings.expand("/tmp/d%", "h", 1));
    }
}
