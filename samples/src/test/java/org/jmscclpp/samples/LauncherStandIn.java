package org.jmscclpp.samples;

import java.io.File;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.RankEnvironment;

/**
 * A launcher of one rank for {@link LaunchedRankTest}, which kills it: starts the rank with the
 * {@link Launcher}'s command line ({@link LaunchedRank} watching this process), but with the rank's
 * stdout and stderr going to a file, so what the rank says after this process died can be read.
 *
 * <p>{@code LauncherStandIn OUTPUT_FILE MAIN_CLASS [args...]}: prints {@code rank pid N}, then waits
 * for the rank (two minutes at most) and exits with its exit code.
 */
public final class LauncherStandIn {

    private LauncherStandIn() {
    }

    public static void main(String[] args) throws Exception {
        List<String> command = Launcher.rankCommand(List.of(), args[1], Arrays.asList(args).subList(2, args.length));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File(args[0])));
        Map<String, String> env = pb.environment();
        env.put(RankEnvironment.JMSCCLPP_RANK, "0");
        env.put(RankEnvironment.JMSCCLPP_WORLD_SIZE, "1");
        env.put(RankEnvironment.COMM_ID, "127.0.0.1:" + Launcher.freeLoopbackPort());
        Process rank = pb.start();
        System.out.println("rank pid " + rank.pid());
        System.out.flush();
        // the test kills this process; the bound only limits the life of one it forgot
        if (!rank.waitFor(Duration.ofMinutes(2).toSeconds(), TimeUnit.SECONDS)) {
            rank.destroyForcibly();
            System.exit(124);
        }
        System.exit(rank.exitValue());
    }
}
