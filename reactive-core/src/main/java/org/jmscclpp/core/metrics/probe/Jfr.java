package org.jmscclpp.core.metrics.probe;

/**
 * Whether this runtime has Flight Recorder ({@code jdk.jfr}, which a jlink image such as the
 * jmscclpp bundle may leave out): only then is {@link JfrEvents}, the one class that names JFR
 * types, ever loaded. Without it the counters work all the same and no event is emitted.
 */
final class Jfr {

    /** Whether {@code jdk.jfr} is in the runtime and readable. */
    static final boolean AVAILABLE = available();

    private Jfr() {
    }

    private static boolean available() {
        Module jfr = ModuleLayer.boot().findModule("jdk.jfr").orElse(null);
        return jfr != null && Jfr.class.getModule().canRead(jfr);
    }

    /**
     * Has the events registered once Flight Recorder starts (at once if it runs already): registering
     * starts JFR's own machinery, a few hundred milliseconds that a process which never records
     * should not pay. Returns whether events may be emitted at all.
     */
    static boolean listen() {
        if (!AVAILABLE) {
            return false;
        }
        try {
            JfrEvents.listen();
            return true;
        } catch (RuntimeException | LinkageError e) {
            // Flight Recorder disabled or unsupported on this JVM
            return false;
        }
    }
}
