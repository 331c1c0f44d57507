package org.jmscclpp.bootstrap;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.testkit.BootstrapChecks;
import reactor.core.publisher.Mono;

/**
 * One rank of a multi-process test job, run in a child JVM by {@link RankProcesses}. Arguments are
 * {@code key=value} pairs:
 *
 * <table>
 *   <caption>Arguments</caption>
 *   <tr><th>key</th><th>meaning</th></tr>
 *   <tr><td>{@code rank}, {@code nranks}</td><td>this rank and the job size</td></tr>
 *   <tr><td>{@code mode}</td><td>{@code id}: rank 0 creates the unique id and prints {@code UNIQUE_ID <hex>},
 *       the other ranks take it from {@code id=<hex>}; {@code address}: every rank initializes with
 *       {@code address=ip:port}</td></tr>
 *   <tr><td>{@code scenario}</td><td>{@code checks}: {@link BootstrapChecks#all}, close, print {@code CHECKS OK};
 *       {@code loop-allgather}: print {@code READY}, then allGather 8 bytes until an error</td></tr>
 *   <tr><td>{@code init-timeout-ms}, {@code op-timeout-ms}</td><td>{@link BootstrapOptions} deadlines (default 20000)</td></tr>
 *   <tr><td>{@code pace-ms}</td><td>loop-allgather: rank 0 pauses this long between rounds (default 0)</td></tr>
 * </table>
 *
 * <p>A {@link JmscclppException} prints
 * {@code FAILED <code> peer=<peer|none> elapsed_ms=<since the failing operation began> message=<message>}
 * and exits with 3; any other error prints its stack trace and exits with 1; success exits with 0.
 * The {@code org.jmscclpp.bootstrap} loggers print at DEBUG, one line per record, so a test sees
 * for example the moment this rank checked in with the root. The rank halts when its standard
 * input ends: the test JVM that started it is gone, and nothing else would stop it.
 */
final class RankMain {

    static final int EXIT_OK = 0;
    static final int EXIT_ERROR = 1;
    static final int EXIT_FAILED = 3;
    private static final int EXIT_ORPHANED = 4;

    /** Held strongly: java.util.logging forgets the level of a logger nobody references. */
    private static final Logger BOOTSTRAP_LOGGERS = Logger.getLogger("org.jmscclpp.bootstrap");

    /** When the operation that may fail began ({@link System#nanoTime()}). */
    private static volatile long opStart = System.nanoTime();

    private RankMain() {
    }

    public static void main(String[] args) {
        logOneLinePerRecord();
        exit(args, RankMain::run);
    }

    /** The body of a rank process's {@code main}: {@link RankMain#exit} runs it and exits with its code. */
    @FunctionalInterface
    interface Body {
        int run(Map<String, String> args) throws Exception;
    }

    /**
     * Runs a rank process: halts when the parent goes, runs {@code body} on the parsed arguments,
     * prints what it threw (exit {@link #EXIT_ERROR}) and exits with its code after flushing.
     */
    static void exit(String[] args, Body body) {
        haltWhenParentGoes();
        int code;
        try {
            code = body.run(parse(args));
        } catch (Throwable t) {
            System.out.flush();
            t.printStackTrace();
            code = EXIT_ERROR;
        }
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    private static int run(Map<String, String> a) {
        int rank = Integer.parseInt(required(a, "rank"));
        int n = Integer.parseInt(required(a, "nranks"));
        Duration initTimeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("init-timeout-ms", "20000")));
        Duration opTimeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("op-timeout-ms", "20000")));
        String scenario = required(a, "scenario");
        BootstrapOptions options = BootstrapOptions.builder().initTimeout(initTimeout).operationTimeout(opTimeout)
                .build();
        TcpBootstrap bs = TcpBootstrap.create(rank, n, options);
        try {
            Mono<TcpBootstrap> init = switch (required(a, "mode")) {
                case "id" -> {
                    UniqueId id;
                    if (rank == 0) {
                        id = bs.createUniqueId();
                        say("UNIQUE_ID " + id);
                    } else {
                        id = UniqueId.parse(required(a, "id"));
                    }
                    yield bs.initialize(id);
                }
                case "address" -> bs.initialize(required(a, "address"));
                default -> throw new IllegalArgumentException("mode must be id or address, got " + a.get("mode"));
            };
            opStart = System.nanoTime();
            // The Mono has its own deadline (initTimeout); this bound only catches a Mono that never ends.
            init.block(initTimeout.plusSeconds(10));
            say("READY");
            switch (scenario) {
                case "checks" -> {
                    opStart = System.nanoTime();
                    BootstrapChecks.all(bs).block(opTimeout.multipliedBy(8).plusSeconds(10));
                    bs.close();
                    say("CHECKS OK");
                }
                case "loop-allgather" -> loopAllGather(bs, Long.parseLong(a.getOrDefault("pace-ms", "0")), opTimeout);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            return EXIT_OK;
        } catch (JmscclppException e) {
            long elapsed = (System.nanoTime() - opStart) / 1_000_000;
            say("FAILED " + e.code() + " peer=" + (e.peer() == JmscclppException.NONE ? "none" : e.peer())
                    + " elapsed_ms=" + elapsed + " message=" + e.getMessage().replace('\n', ' '));
            e.printStackTrace();
            return EXIT_FAILED;
        } finally {
            bs.close();
        }
    }

    /**
     * All-gathers (rank, round) from every rank, checking each slot, until an operation fails. Rank 0
     * pauses {@code paceMillis} between rounds, so the other ranks spend that time waiting inside
     * allGather (a kill then lands in the middle of their operation) and the job does not eat the CPU.
     */
    private static void loopAllGather(TcpBootstrap bs, long paceMillis, Duration opTimeout) {
        int rank = bs.rank();
        int n = bs.size();
        for (int round = 0; ; round++) {
            if (rank == 0 && paceMillis > 0) {
                try {
                    Thread.sleep(paceMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }
            byte[] local = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(rank).putInt(round).array();
            opStart = System.nanoTime();
            byte[] all = bs.allGather(local).block(opTimeout.plusSeconds(10));
            if (all == null || all.length != 8 * n) {
                throw new AssertionError("round " + round + ": allGather gave "
                        + (all == null ? "nothing" : all.length + " bytes") + ", expected " + 8 * n);
            }
            ByteBuffer in = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < n; r++) {
                int fromRank = in.getInt();
                int fromRound = in.getInt();
                if (fromRank != r || fromRound != round) {
                    throw new AssertionError("round " + round + ": slot " + r + " holds (rank " + fromRank
                            + ", round " + fromRound + ")");
                }
            }
        }
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("arguments are key=value, got '" + arg + "'");
            }
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        return a;
    }

    static String required(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return v;
    }

    private static void logOneLinePerRecord() {
        Formatter oneLine = new Formatter() {
            @Override
            public String format(LogRecord r) {
                return "LOG " + r.getLevel() + " " + r.getLoggerName() + ": " + formatMessage(r).replace('\n', ' ')
                        + System.lineSeparator();
            }
        };
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        ConsoleHandler console = new ConsoleHandler();
        console.setLevel(Level.ALL);
        console.setFormatter(oneLine);
        root.addHandler(console);
        BOOTSTRAP_LOGGERS.setLevel(Level.FINE);
    }

    static void haltWhenParentGoes() {
        Thread.ofPlatform().daemon().name("parent-watch").start(() -> {
            InputStream in = System.in;
            try {
                while (in.read() >= 0) {
                    // the test never writes; reading only detects the end of the pipe
                }
            } catch (IOException e) {
                // a broken pipe means the same as its end
            }
            Runtime.getRuntime().halt(EXIT_ORPHANED);
        });
    }
}
