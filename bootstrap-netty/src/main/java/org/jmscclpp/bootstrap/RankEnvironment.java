package org.jmscclpp.bootstrap;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * Who this process is in a job: its rank, the number of ranks, the address where rank 0 hosts the
 * bootstrap root, and its rank among the ranks of its host.
 *
 * <p>{@link #from(Map)} understands three launch conventions, tried in this order:
 * <ol>
 *   <li>jmscclpp ({@code jmscclpp run}): {@code JMSCCLPP_RANK}, {@code JMSCCLPP_WORLD_SIZE},
 *       {@code MSCCLPP_COMM_ID}, optionally {@code JMSCCLPP_LOCAL_RANK};</li>
 *   <li>Open MPI ({@code mpirun}): {@code OMPI_COMM_WORLD_RANK}, {@code OMPI_COMM_WORLD_SIZE},
 *       optionally {@code OMPI_COMM_WORLD_LOCAL_RANK}, plus {@code MSCCLPP_COMM_ID} which the user
 *       exports to every rank ({@code mpirun -x MSCCLPP_COMM_ID=10.0.0.1:50000});</li>
 *   <li>torchrun: {@code RANK}, {@code WORLD_SIZE}, {@code MASTER_ADDR}, {@code MASTER_PORT},
 *       optionally {@code LOCAL_RANK}; {@code MSCCLPP_COMM_ID}, when set, wins over
 *       {@code MASTER_ADDR:MASTER_PORT}.</li>
 * </ol>
 * Where no local rank is given, it equals the rank, which is right for single-host jobs. Every
 * rank also needs the same {@code MSCCLPP_BOOTSTRAP_SECRET} (which {@code jmscclpp run} sets;
 * with mpirun: {@code -x MSCCLPP_BOOTSTRAP_SECRET}), or {@code MSCCLPP_BOOTSTRAP_INSECURE=1}: see
 * {@link TcpBootstrap#initialize(String)}.
 *
 * <p>A process started by any of these launchers joins its job with:
 * <pre>{@code
 * RankEnvironment env = RankEnvironment.fromEnvironment();
 * TcpBootstrap bs = TcpBootstrap.create(env.rank(), env.worldSize());
 * bs.initialize(env.rootAddress()).block(Duration.ofSeconds(30));
 * }</pre>
 *
 * @param rank        this process's rank, in [0, worldSize)
 * @param worldSize   number of ranks in the job, at least 1
 * @param rootAddress where rank 0 hosts the bootstrap root, in any form {@link TcpBootstrap#initialize(String)}
 *                    accepts ({@code ip:port}, {@code if:ip:port}, {@code [v6]:port}, {@code host:port})
 * @param localRank   this process's rank among the ranks of its host, at least 0
 */
public record RankEnvironment(int rank, int worldSize, String rootAddress, int localRank) {

    /** Variable holding the root address in every convention (the name MSCCL++ uses). */
    public static final String COMM_ID = "MSCCLPP_COMM_ID";

    /** Set by {@code jmscclpp run}: this process's rank. */
    public static final String JMSCCLPP_RANK = "JMSCCLPP_RANK";

    /** Set by {@code jmscclpp run}: the number of ranks. */
    public static final String JMSCCLPP_WORLD_SIZE = "JMSCCLPP_WORLD_SIZE";

    /** Set by {@code jmscclpp run}: the rank on this host. */
    public static final String JMSCCLPP_LOCAL_RANK = "JMSCCLPP_LOCAL_RANK";

    private static final String HOW_TO = "set JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE and MSCCLPP_COMM_ID=ip:port, "
            + "or start the ranks with 'jmscclpp run -n N SAMPLE', mpirun (with -x MSCCLPP_COMM_ID=ip:port "
            + "-x MSCCLPP_BOOTSTRAP_SECRET) "
            + "or torchrun";

    /** Checks the values; anything out of range is {@link ErrorCode#INVALID_USAGE}. */
    public RankEnvironment {
        if (worldSize < 1) {
            throw invalid("the world size must be at least 1, got " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw invalid("the rank must be in [0, " + worldSize + "), got " + rank);
        }
        if (localRank < 0) {
            throw invalid("the local rank must be at least 0, got " + localRank);
        }
        checkAddress(rootAddress);
    }

    /** Reads the process environment; see {@link #from(Map)}. */
    public static RankEnvironment fromEnvironment() {
        return from(System.getenv());
    }

    /**
     * Reads the rank identity from {@code env} (normally {@link System#getenv()}).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the variables to set when none of the
     *                           conventions is complete, or when a value is not a number or out of range
     */
    public static RankEnvironment from(Map<String, String> env) {
        if (present(env, JMSCCLPP_RANK) || present(env, JMSCCLPP_WORLD_SIZE)) {
            requireAll(env, "jmscclpp", JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE, COMM_ID);
            return build(env, JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE, JMSCCLPP_LOCAL_RANK, value(env, COMM_ID));
        }
        if (present(env, "OMPI_COMM_WORLD_RANK")) {
            requireAll(env, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", COMM_ID);
            return build(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                    value(env, COMM_ID));
        }
        if (present(env, "RANK") || present(env, "WORLD_SIZE")) {
            if (present(env, COMM_ID)) {
                requireAll(env, "torchrun", "RANK", "WORLD_SIZE");
                return build(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", value(env, COMM_ID));
            }
            requireAll(env, "torchrun", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT");
            String host = value(env, "MASTER_ADDR");
            // a bare IPv6 literal needs brackets before a port can follow it
            String root = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
            return build(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", root + ":" + value(env, "MASTER_PORT"));
        }
        throw invalid("no rank identity in the environment: " + HOW_TO);
    }

    private static RankEnvironment build(Map<String, String> env, String rankVar, String sizeVar,
                                         String localVar, String root) {
        int size = number(env, sizeVar);
        int rank = number(env, rankVar);
        if (size < 1) {
            throw invalid(sizeVar + " must be at least 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw invalid(rankVar + "=" + rank + " is outside [0, " + sizeVar + "=" + size + ")");
        }
        int local = present(env, localVar) ? number(env, localVar) : rank;
        if (local < 0) {
            throw invalid(localVar + " must be at least 0, got " + local);
        }
        return new RankEnvironment(rank, size, root, local);
    }

    private static void checkAddress(String address) {
        int colon = address.lastIndexOf(':');
        String port = colon < 0 ? "" : address.substring(colon + 1);
        boolean ok = colon > 0 && !port.isEmpty() && port.chars().allMatch(c -> c >= '0' && c <= '9')
                && port.length() <= 5 && Integer.parseInt(port) >= 1 && Integer.parseInt(port) <= 65535;
        if (!ok) {
            throw invalid("the root address must look like ip:port, if:ip:port, [v6]:port or host:port "
                    + "with a port in [1, 65535], got '" + address + "'");
        }
    }

    private static void requireAll(Map<String, String> env, String convention, String... names) {
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            if (!present(env, name)) {
                missing.add(name);
            }
        }
        if (!missing.isEmpty()) {
            throw invalid("the " + convention + " launch convention is incomplete: " + String.join(", ", missing)
                    + (missing.size() == 1 ? " is" : " are") + " not set; " + HOW_TO);
        }
    }

    private static int number(Map<String, String> env, String name) {
        String v = value(env, name);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, name + " is not an integer: '" + v + "'")
                    .phase("rank environment").cause(e).build();
        }
    }

    private static boolean present(Map<String, String> env, String name) {
        @Nullable String v = env.get(name);
        return v != null && !v.isBlank();
    }

    private static String value(Map<String, String> env, String name) {
        @Nullable String v = env.get(name);
        return v == null ? "" : v.strip();
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("rank environment").build();
    }
}
