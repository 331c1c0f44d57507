package org.jmscclpp.core.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TunablesTest {

    private static final String NAME = "jmscclpp.test.tunable";

    private final List<String> warnings = new ArrayList<>();
    private final Logger logger = Logger.getLogger(Tunables.class.getName());
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                warnings.add(record.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void listen() {
        logger.addHandler(handler);
    }

    @AfterEach
    void stop() {
        logger.removeHandler(handler);
        System.clearProperty(NAME);
    }

    @Test
    void unsetIsTheDefaultQuietly() {
        assertEquals(20, Tunables.longValue(NAME, 20, 0, 100));
        assertTrue(Tunables.booleanValue(NAME, true));
        assertEquals(List.of(), warnings);
    }

    @Test
    void aNumberInRangeIsTaken() {
        System.setProperty(NAME, " 35 ");
        assertEquals(35, Tunables.intValue(NAME, 20, 0, 100));
        assertEquals(List.of(), warnings);
    }

    @Test
    void notANumberWarnsAndKeepsTheDefault() {
        System.setProperty(NAME, "20us");
        assertEquals(20, Tunables.longValue(NAME, 20, 0, 100));
        assertEquals(1, warnings.size());
        assertTrue(warnings.get(0).contains("-D" + NAME + "=20us is not a whole number; using 20"), warnings.get(0));
    }

    @Test
    void outOfRangeWarnsAndTakesTheNearestBound() {
        System.setProperty(NAME, "-5");
        assertEquals(0, Tunables.longValue(NAME, 20, 0, 100));
        System.setProperty(NAME, "99999999999999999");
        assertEquals(100, Tunables.intValue(NAME, 20, 0, 100));
        assertEquals(2, warnings.size());
        assertTrue(warnings.get(1).contains("is outside 0 to 100; using 100"), warnings.get(1));
    }

    @Test
    void booleansAreTrueOrFalseInAnyCaseElseTheDefault() {
        System.setProperty(NAME, "FALSE");
        assertFalse(Tunables.booleanValue(NAME, true));
        System.setProperty(NAME, "yes");
        assertTrue(Tunables.booleanValue(NAME, true));
        assertEquals(1, warnings.size());
        assertTrue(warnings.get(0).contains("is neither true nor false; using true"), warnings.get(0));
    }
}
