package org.jmscclpp.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/** One in-process run of the command line ({@link Main#run}): its exit code and what it printed to stdout and stderr. */
public record MainRun(int code, String out, String err) {

    /** Runs {@code jmscclpp args} with no rank environment. */
    public static MainRun of(String... args) {
        return of(Map.of(), args);
    }

    /** Runs {@code jmscclpp args} as if the process environment were {@code env}. */
    public static MainRun of(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(List.of(args), o, e, env);
        }
        return new MainRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
