package org.jmscclpp.samples;

/** A rank process of the tests: {@link Main} with {@link TestCollectives} registered. */
final class TestRankMain {

    private TestRankMain() {
    }

    public static void main(String[] args) {
        TestCollectives.register();
        Main.main(args);
    }
}
