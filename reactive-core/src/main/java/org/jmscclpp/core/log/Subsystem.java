package org.jmscclpp.core.log;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * MSCCL++'s debug subsystems ({@code MSCCLPP_DEBUG_SUBSYS}): each jmscclpp logger is filed under
 * one, and INFO, DEBUG and TRACE lines of a subsystem outside the mask are not printed (warnings
 * always are). The bootstrap, the communicator's setup and the proxy's life are {@link #INIT}, as
 * MSCCL++'s own setup lines are.
 */
public enum Subsystem {
    /** Bootstrap, communicator setup, backend and transport choice, proxy start and stop. */
    INIT,
    /** Collective communicators and their algorithms. */
    COLL,
    /** Connections, channels and semaphores between two ranks. */
    P2P,
    /** Shared memory: the host backend's files. */
    SHM,
    /** Network transports (ETHERNET, InfiniBand) and the bootstrap's wire. */
    NET,
    /** CUDA graphs. */
    GRAPH,
    /** The collective tuning table. */
    TUNING,
    /** Environment variables read. */
    ENV,
    /** Device and pinned memory. */
    ALLOC,
    /** API calls. */
    CALL;

    /** MSCCL++'s default mask, when {@code MSCCLPP_DEBUG_SUBSYS} is unset. */
    static final Set<Subsystem> DEFAULT = EnumSet.of(INIT);

    /**
     * The mask a {@code MSCCLPP_DEBUG_SUBSYS} value names, as MSCCL++ parses it: a comma-separated
     * list of names (case ignored; {@code ALL} for every one), or after a leading {@code ^} the
     * subsystems not to print. Unknown names are ignored, as MSCCL++ does; {@code BOOTSTRAP} is
     * taken for {@link #INIT}.
     */
    static Set<Subsystem> parseMask(String value) {
        boolean invert = value.startsWith("^");
        Set<Subsystem> mask = invert ? EnumSet.allOf(Subsystem.class) : EnumSet.noneOf(Subsystem.class);
        for (String name : names(value)) {
            Set<Subsystem> named = named(name.toUpperCase(Locale.ROOT));
            if (invert) {
                mask.removeAll(named);
            } else {
                mask.addAll(named);
            }
        }
        return mask;
    }

    /** The names in a mask that are no subsystem (nor {@code ALL}, {@code BOOTSTRAP}): ignored, and worth a warning. */
    static List<String> unknownNames(String value) {
        List<String> unknown = new ArrayList<>();
        for (String name : names(value)) {
            if (!name.isEmpty() && named(name.toUpperCase(Locale.ROOT)).isEmpty()) {
                unknown.add(name);
            }
        }
        return unknown;
    }

    /** The names of a mask, trimmed, without its leading {@code ^}. */
    private static String[] names(String value) {
        String[] names = (value.startsWith("^") ? value.substring(1) : value).split(",");
        for (int i = 0; i < names.length; i++) {
            names[i] = names[i].trim();
        }
        return names;
    }

    private static Set<Subsystem> named(String name) {
        return switch (name) {
            case "ALL" -> EnumSet.allOf(Subsystem.class);
            case "BOOTSTRAP" -> EnumSet.of(INIT);
            default -> {
                for (Subsystem s : values()) {
                    if (s.name().equals(name)) {
                        yield EnumSet.of(s);
                    }
                }
                yield EnumSet.noneOf(Subsystem.class);
            }
        };
    }
}
