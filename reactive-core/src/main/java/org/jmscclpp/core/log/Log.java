package org.jmscclpp.core.log;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;
import org.jmscclpp.core.log.DebugSettings.DebugLevel;
import org.jspecify.annotations.Nullable;

/**
 * Where every jmscclpp class gets its {@link System.Logger}: {@code Log.logger(Foo.class, Subsystem.INIT)}
 * is {@code System.getLogger(Foo.class.getName())}, filed under an MSCCL++ subsystem.
 *
 * <p>The first call reads {@code MSCCLPP_DEBUG} ({@code VERSION}, {@code WARN}, {@code INFO}, {@code ABORT},
 * {@code TRACE}), {@code MSCCLPP_DEBUG_SUBSYS} and {@code MSCCLPP_DEBUG_FILE} once. They act only when
 * {@code System.Logger} is served by the JDK's own backend, {@code java.util.logging}; an application that
 * installed another {@link System.LoggerFinder} (SLF4J's or Log4j's bridge) configures the
 * {@code org.jmscclpp} loggers in that backend instead.
 * <ul>
 *   <li>{@code MSCCLPP_DEBUG} set: the {@code org.jmscclpp} logger gets the level it names and a handler
 *       that prints MSCCL++-like lines to stderr (or the file); its records stop going to the root
 *       logger's console handler (no line twice), unless the application configured
 *       {@code java.util.logging} through {@code java.util.logging.config.file} or {@code .class}, whose
 *       handlers keep receiving them.</li>
 *   <li>Unset: a library stays quiet. Unless the application configured {@code java.util.logging} (one
 *       of those properties) or already gave {@code org.jmscclpp} a level, that logger is set to WARNING,
 *       so the JDK's default console handler shows jmscclpp's warnings but not its INFO lines. An
 *       application that wants them sets the level of {@code org.jmscclpp} (or a logger below it).</li>
 * </ul>
 */
public final class Log {

    /** The logger every jmscclpp logger's records pass through, held so its level is not forgotten. */
    static final String ROOT_NAME = "org.jmscclpp";

    /** The JDK's finder that serves System.Logger with java.util.logging. */
    private static final String JUL_FINDER = "sun.util.logging.internal.LoggingProviderImpl";

    private static final Map<String, Subsystem> SUBSYSTEMS = new ConcurrentHashMap<>();

    /** Strong: java.util.logging forgets the level and handlers of a logger nobody references. */
    private static final @Nullable Logger ROOT;

    static {
        ROOT = configure(System.getenv());
    }

    private Log() {
    }

    /** The logger of {@code owner} (named after its class), filed under {@code subsystem}. */
    public static System.Logger logger(Class<?> owner, Subsystem subsystem) {
        SUBSYSTEMS.put(owner.getName(), subsystem);
        return System.getLogger(owner.getName());
    }

    /** Whether {@code System.Logger} is served by {@code java.util.logging}, the JDK's default. */
    static boolean julBacked() {
        return System.LoggerFinder.getLoggerFinder().getClass().getName().equals(JUL_FINDER);
    }

    /** Whether the application configured {@code java.util.logging} itself (a configuration file or class). */
    static boolean julConfigured() {
        return System.getProperty("java.util.logging.config.file") != null
                || System.getProperty("java.util.logging.config.class") != null;
    }

    private static @Nullable Logger configure(Map<String, String> env) {
        if (!julBacked()) {
            return null;
        }
        String host = hostName();
        long pid = ProcessHandle.current().pid();
        DebugSettings s = DebugSettings.from(env, host, pid);
        Logger root = Logger.getLogger(ROOT_NAME);
        boolean configured = julConfigured();
        if (s.level() == DebugLevel.NONE) {
            if (!configured && root.getLevel() == null) {
                root.setLevel(DebugLevel.NONE.jul);
            }
            if (s.unknown() != null) {
                System.getLogger(Log.class.getName()).log(System.Logger.Level.WARNING, "{0}={1} is not one of "
                        + "VERSION, WARN, INFO, ABORT, TRACE; ignored", DebugSettings.DEBUG_ENV, s.unknown());
            }
            return root;
        }
        if (!s.unknownSubsystems().isEmpty()) {
            System.getLogger(Log.class.getName()).log(System.Logger.Level.WARNING, "{0} names {1}, no subsystem of "
                    + "{2} (nor ALL); ignored", DebugSettings.SUBSYS_ENV, s.unknownSubsystems(),
                    java.util.Arrays.toString(Subsystem.values()));
        }
        PrintStream out = System.err;
        String fileProblem = null;
        if (s.file() != null) {
            try {
                Path path = Path.of(s.file());
                out = new PrintStream(new FileOutputStream(path.toFile()), true, StandardCharsets.UTF_8);
            } catch (IOException | RuntimeException e) {
                fileProblem = DebugSettings.FILE_ENV + "=" + s.file() + " cannot be written (" + e
                        + "); printing to stderr";
            }
        }
        DebugHandler handler = new DebugHandler(out, host, pid, s.mask(), SUBSYSTEMS);
        root.setLevel(s.level().jul);
        root.addHandler(handler);
        root.setUseParentHandlers(configured);
        // the banner NCCL prints at VERSION and above, as it prints it: without the line prefix
        handler.print("jmscclpp version " + version());
        if (fileProblem != null) {
            System.getLogger(Log.class.getName()).log(System.Logger.Level.WARNING, fileProblem);
        }
        return root;
    }

    private static String version() {
        String v = Log.class.getPackage().getImplementationVersion();
        if (v == null) {
            v = Log.class.getModule().getDescriptor() == null ? null
                    : Log.class.getModule().getDescriptor().rawVersion().orElse(null);
        }
        return v == null ? "unknown (classes not from a released jar)" : v;
    }

    /** The host's name up to its first dot, as MSCCL++ prints it. */
    static String hostName() {
        String name = System.getenv("HOSTNAME");
        if (name == null || name.isBlank()) {
            try {
                name = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            } catch (IOException | RuntimeException e) {
                try {
                    name = InetAddress.getLocalHost().getHostName();
                } catch (IOException | RuntimeException e2) {
                    name = "localhost";
                }
            }
        }
        int dot = name.indexOf('.');
        return dot > 0 ? name.substring(0, dot) : name;
    }
}
