package org.jmscclpp.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jmscclpp bench tune --json SWEEP.json [--json ...] [--out FILE]}: the tuning table that
 * sweeps measured. Give it sweeps of one rank count and backend that ran each algorithm of a kind
 * ({@code bench coll --algo A --json ...}); for every size it keeps the algorithm whose
 * out-of-place time was lowest, and writes rows of {@link TuningTable}'s text form: per kind one row
 * per run of sizes with the same winner, up to the largest size of the run, the last row of a kind
 * open ({@code *}). The comments say which sweeps, host and devices it came from. Prints the table,
 * or writes it to FILE.
 */
public final class TuneCommand {

    public static final String SYNOPSIS = "jmscclpp bench tune --json SWEEP.json [--json SWEEP.json ...] [--out FILE]";

    private TuneCommand() {
    }

    /** The options of {@code jmscclpp bench tune}. */
    @Command(name = "tune", mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false,
            description = "The tuning table that sweeps measured: per size the algorithm whose out-of-place time was"
                    + " lowest, over sweeps of one rank count and backend that ran each algorithm (bench coll --algo A"
                    + " --json FILE), in the text form of the engine's tuning table.")
    static final class Args {
        @Option(names = "--json", paramLabel = "SWEEP.json", required = true, description = "a sweep's report"
                + " (repeat for each algorithm)")
        List<Path> inputs = new ArrayList<>();
        @Option(names = "--out", paramLabel = "FILE", description = "write the table there (default: print it)")
        @Nullable Path target;
    }

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Args a;
        try {
            a = SampleArgs.parse(new Args(), args);
        } catch (IllegalArgumentException e) {
            return usage(err, e.getMessage());
        }
        List<Path> inputs = a.inputs;
        Path target = a.target;
        List<CollReport> reports = new ArrayList<>();
        for (Path p : inputs) {
            try {
                reports.add(CollJson.read(Files.readString(p, StandardCharsets.UTF_8)));
            } catch (IOException | IllegalArgumentException e) {
                // an I/O error's message may be the path alone (NoSuchFileException): its type says what happened
                err.println("jmscclpp bench tune: cannot read " + p + ": " + (e instanceof IOException ? e
                        : e.getMessage()));
                return ExitCodes.USAGE;
            }
        }
        String table;
        try {
            table = table(reports, inputs);
        } catch (IllegalArgumentException e) {
            err.println("jmscclpp bench tune: " + e.getMessage());
            return ExitCodes.USAGE;
        }
        if (target == null) {
            out.print(table);
            return ExitCodes.OK;
        }
        try {
            // as bench coll's --json and bench plot's --plot: the file's folder is made when missing
            Path parent = target.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(target, table, StandardCharsets.UTF_8);
            out.println("bench tune: wrote " + target);
            return ExitCodes.OK;
        } catch (IOException e) {
            err.println("jmscclpp bench tune: cannot write " + target + ": " + e);
            return ExitCodes.FAILURE;
        }
    }

    /**
     * The table of {@code reports} (one rank count, one backend, each with a correct out-of-place time of
     * jmscclpp), with its provenance in comments.
     *
     * @throws IllegalArgumentException naming the sweep that differs from the others or has no such time
     */
    static String table(List<CollReport> reports, List<Path> names) {
        int ranks = reports.get(0).ranks();
        String backend = reports.get(0).backend();
        // kind -> size -> (algorithm -> best out-of-place time)
        Map<CollectiveKind, TreeMap<Long, Map<String, Double>>> times = new TreeMap<>();
        StringBuilder b = new StringBuilder();
        b.append("# Tuning table written by 'jmscclpp bench tune' from ").append(reports.size()).append(" sweeps of ")
                .append(ranks).append(" ranks:\n");
        for (int i = 0; i < reports.size(); i++) {
            CollReport r = reports.get(i);
            if (r.ranks() != ranks) {
                throw new IllegalArgumentException(names.get(i) + " ran " + r.ranks() + " ranks, the others " + ranks);
            }
            // each backend's engine has its own algorithms and its own table
            if (!r.backend().equals(backend)) {
                throw new IllegalArgumentException(names.get(i) + " ran the " + r.backend() + " backend, the others "
                        + backend);
            }
            b.append("#   ").append(r.command()).append('\n');
            boolean used = false;
            for (CollectiveRunner.Measurement m : r.rows()) {
                if (!m.implementation().equals(CollReport.JMSCCLPP) || m.inPlace() || m.wrong() > 0) {
                    continue;
                }
                times.computeIfAbsent(m.kind(), k -> new TreeMap<>()).computeIfAbsent(m.size(), s -> new TreeMap<>())
                        .merge(m.algorithm(), m.timeUs(), Math::min);
                used = true;
            }
            if (!used) {
                throw new IllegalArgumentException(names.get(i) + " has no correct out-of-place time of jmscclpp (its"
                        + " rows are missing or have wrong elements)");
            }
        }
        CollReport first = reports.get(0);
        b.append("# on ").append(first.devices().isEmpty() ? first.host() : first.devices().get(0).strip())
                .append(", ").append(first.versions()).append('\n');
        b.append("# per size the algorithm with the lowest out-of-place time; max-bytes is the largest size measured\n");
        b.append(String.format(Locale.ROOT, "# %-16s %-6s %-9s %-10s %s%n", "kind", "ranks", "topology", "max-bytes",
                "algorithm"));
        for (Map.Entry<CollectiveKind, TreeMap<Long, Map<String, Double>>> k : times.entrySet()) {
            String label = k.getKey() == CollectiveKind.SEND ? "send" : k.getKey().label();
            List<String[]> rows = new ArrayList<>();
            String current = null;
            long upTo = 0;
            for (Map.Entry<Long, Map<String, Double>> size : k.getValue().entrySet()) {
                String best = size.getValue().entrySet().stream().min(Map.Entry.comparingByValue()).orElseThrow().getKey();
                if (current != null && !best.equals(current)) {
                    rows.add(new String[] {current, Long.toString(upTo)});
                }
                current = best;
                upTo = size.getKey();
            }
            rows.add(new String[] {current, "*"});
            for (String[] row : rows) {
                b.append(String.format(Locale.ROOT, "%-18s %-6s %-9s %-10s %s%n", label, Integer.toString(ranks), "*",
                        row[1], row[0]));
            }
            if (k.getKey() == CollectiveKind.SEND) {
                b.append(String.format(Locale.ROOT, "%-18s %-6s %-9s %-10s %s%n", "recv", Integer.toString(ranks), "*",
                        "*", rows.get(rows.size() - 1)[0]));
            }
        }
        // the table must read back as it is meant to
        TuningTable.parse(b.toString(), "bench tune");
        return b.toString();
    }

    private static int usage(PrintStream err, String problem) {
        err.println("jmscclpp bench tune: " + problem);
        err.println("usage: " + SYNOPSIS);
        return ExitCodes.USAGE;
    }
}
