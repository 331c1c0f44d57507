package org.jmscclpp.core.metrics.probe;

/**
 * Whether this runtime has Flight Recorder ({@code jdk.jfr}, which a jlink image such as the
 * jmscclpp bundle may leave out): only then is {@link JfrEvents}, the one class that names JFR
 * types, ever loaded. Without it the counters work all the same and no event is emitted.
 */
final class Jfr {

    /** Whether the events are registered and may be emitted. */
    static final boolean ON = start();

    private Jfr() {
    }

    private static boolean start() {
        Module jfr = ModuleLayer.boot().findModule("jdk.jfr").orElse(null);
        if (jfr == null || !Jfr.class.getModule().canRead(jfr)) {
            return false;
        }
        try {
            JfrEvents.register();
            return true;
        } catch (RuntimeException | LinkageError e) {
            // Flight Recorder disabled or unsupported on this JVM
            return false;
        }
    }
}
