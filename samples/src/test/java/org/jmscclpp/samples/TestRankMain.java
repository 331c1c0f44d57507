package org.jmscclpp.samples;

import java.util.List;
import org.jmscclpp.cli.Main;

/** A rank process of the tests: {@link Main} with {@link CorruptingComm} registered (as {@code --algo test-corrupt}). */
public final class TestRankMain {

    /**
     * JVM options of the tests' short rank processes: the client compiler alone and the serial
     * collector start them faster on a small, shared machine.
     */
    public static final List<String> JVM_ARGS = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

    /** The {@code --algo} name of the collective that corrupts one output element per call. */
    public static final String CORRUPT = CorruptingComm.NAME;

    private TestRankMain() {
    }

    public static void main(String[] args) {
        CorruptingComm.register();
        Main.main(args);
    }

    /** Registers the test wrappers in this process too (the bench's command checks {@code --algo} names here). */
    public static void registerWrappers() {
        CorruptingComm.register();
    }
}
