package org.jmscclpp.bootstrap;

import java.time.Duration;
import org.jmscclpp.testkit.BootstrapChecks;

/**
 * A two-rank TCP bootstrap job in one JVM (explicit address on loopback, options from the environment),
 * for the logging tests: it initializes, runs a barrier, closes and prints {@code JOB DONE} on stdout.
 */
final class LoggedBootstrapJob {

    static final String DONE = "JOB DONE";

    private LoggedBootstrapJob() {
    }

    public static void main(String[] args) {
        Duration step = Duration.ofSeconds(30);
        BootstrapOptions options = BootstrapOptions.builderFrom(System.getenv()).initTimeout(step)
                .operationTimeout(step).build();
        try (LocalJob job = LocalJob.withAddress(2, "127.0.0.1:" + LocalJob.freeFixedPort(), options, step)) {
            BootstrapChecks.runAll(job.ranks(), step);
        }
        System.out.println(DONE);
        System.out.flush();
        System.exit(0);
    }
}
