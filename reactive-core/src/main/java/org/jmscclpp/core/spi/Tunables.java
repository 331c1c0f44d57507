package org.jmscclpp.core.spi;

import java.util.Locale;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;

/**
 * The {@code -Djmscclpp.*} tuning properties, read once where they are used: unset, the default;
 * set to something that is not a whole number (or not {@code true}/{@code false}), or outside the
 * range the setting allows, a WARNING naming the property, the value and what is used instead
 * (the default, or the nearest bound) — never silently the default, as {@link Integer#getInteger}
 * does with {@code -Djmscclpp.waitSpinMicros=20us}. A property is read when its class loads, where
 * an exception would fail the class for good, hence a warning rather than an error. Public for
 * the other modules; not an application API.
 */
public final class Tunables {

    private static final System.Logger LOG = Log.logger(Tunables.class, Subsystem.ENV);

    private Tunables() {
    }

    /** Property {@code name} as a long in [{@code min}, {@code max}]; {@code defaultValue} where unset. */
    public static long longValue(String name, long defaultValue, long min, long max) {
        String text = System.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        long value;
        try {
            value = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            LOG.log(System.Logger.Level.WARNING, "-D" + name + "=" + text + " is not a whole number; using "
                    + defaultValue);
            return defaultValue;
        }
        if (value < min || value > max) {
            long used = Math.clamp(value, min, max);
            LOG.log(System.Logger.Level.WARNING, "-D" + name + "=" + text + " is outside " + min + " to " + max
                    + "; using " + used);
            return used;
        }
        return value;
    }

    /** Property {@code name} as an int in [{@code min}, {@code max}]; {@code defaultValue} where unset. */
    public static int intValue(String name, int defaultValue, int min, int max) {
        return (int) longValue(name, defaultValue, min, max);
    }

    /** Property {@code name} as {@code true} or {@code false} (any case); {@code defaultValue} where unset. */
    public static boolean booleanValue(String name, boolean defaultValue) {
        String text = System.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> {
                LOG.log(System.Logger.Level.WARNING, "-D" + name + "=" + text + " is neither true nor false; using "
                        + defaultValue);
                yield defaultValue;
            }
        };
    }
}
