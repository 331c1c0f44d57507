package org.jmscclpp.core.log;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import org.jspecify.annotations.Nullable;

/**
 * What {@code MSCCLPP_DEBUG}, {@code MSCCLPP_DEBUG_SUBSYS} and {@code MSCCLPP_DEBUG_FILE} ask for, read as
 * MSCCL++ reads them.
 *
 * @param level       the threshold ({@link DebugLevel#NONE} when unset or not understood)
 * @param unknown     the value of {@code MSCCLPP_DEBUG} when it is none of MSCCL++'s, else null
 * @param mask        the subsystems whose INFO, DEBUG and TRACE lines print
 * @param unknownSubsystems the names in {@code MSCCLPP_DEBUG_SUBSYS} that are no subsystem (ignored)
 * @param file        {@code MSCCLPP_DEBUG_FILE} with {@code %h} (host) and {@code %p} (pid) expanded, or null
 *                    for stderr; only above {@link DebugLevel#VERSION}, as in MSCCL++
 */
record DebugSettings(DebugLevel level, @Nullable String unknown, Set<Subsystem> mask, List<String> unknownSubsystems,
                     @Nullable String file) {

    static final String DEBUG_ENV = "MSCCLPP_DEBUG";
    static final String SUBSYS_ENV = "MSCCLPP_DEBUG_SUBSYS";
    static final String FILE_ENV = "MSCCLPP_DEBUG_FILE";

    /** MSCCL++'s levels, in its order: each shows what the ones before it show. */
    enum DebugLevel {
        /** Unset: jmscclpp stays quiet below WARNING unless the application configures logging. */
        NONE(Level.WARNING),
        /** Only the version line. */
        VERSION(Level.OFF),
        /** Warnings and errors. */
        WARN(Level.WARNING),
        /** One line per setup phase, and warnings. */
        INFO(Level.INFO),
        /** As INFO: MSCCL++ prints no line of its own at ABORT. */
        ABORT(Level.INFO),
        /** Everything: DEBUG and TRACE detail too. */
        TRACE(Level.ALL);

        /** The level the {@code org.jmscclpp} loggers get. */
        final Level jul;

        DebugLevel(Level jul) {
            this.jul = jul;
        }
    }

    static DebugSettings from(Map<String, String> env, String host, long pid) {
        String debug = env.get(DEBUG_ENV);
        DebugLevel level = DebugLevel.NONE;
        String unknown = null;
        if (debug != null && !debug.isEmpty()) {
            try {
                level = DebugLevel.valueOf(debug.trim().toUpperCase(Locale.ROOT));
                if (level == DebugLevel.NONE) {
                    unknown = debug;
                }
            } catch (IllegalArgumentException e) {
                unknown = debug;
            }
        }
        String subsys = env.get(SUBSYS_ENV);
        Set<Subsystem> mask = subsys == null ? Subsystem.DEFAULT : Subsystem.parseMask(subsys);
        String file = env.get(FILE_ENV);
        String path = level.compareTo(DebugLevel.VERSION) > 0 && file != null && !file.isEmpty()
                ? expand(file, host, pid) : null;
        return new DebugSettings(level, unknown, mask, subsys == null ? List.of() : Subsystem.unknownNames(subsys), path);
    }

    /** {@code %h} is the host name, {@code %p} the pid, {@code %%} a percent sign; anything else stays. */
    static String expand(String pattern, String host, long pid) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c != '%' || i + 1 == pattern.length()) {
                b.append(c);
                continue;
            }
            char n = pattern.charAt(++i);
            switch (n) {
                case '%' -> b.append('%');
                case 'h' -> b.append(host);
                case 'p' -> b.append(pid);
                default -> b.append('%').append(n);
            }
        }
        return b.toString();
    }
}
