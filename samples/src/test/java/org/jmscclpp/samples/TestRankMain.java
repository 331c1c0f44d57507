package org.jmscclpp.samples;

import java.util.List;
import org.jmscclpp.cli.Main;

/** A rank process of the tests: {@link Main} with {@link TestCollectives} registered. */
final class TestRankMain {

    /**
     * JVM options of the tests' short rank processes: the client compiler alone and the serial
     * collector start them faster on a small, shared machine.
     */
    static final List<String> JVM_ARGS = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

    private TestRankMain() {
    }

    public static void main(String[] args) {
        TestCollectives.register();
        Main.main(args);
    }
}
