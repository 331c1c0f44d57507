package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.host.HostBackend;

/**
 * One rank process of {@link HostCollectivesProcessTest}: over a TCP bootstrap and the host
 * backend (shared memory between processes), runs each host algorithm named on the command line
 * ({@code KIND/ALGORITHM}) on a few counts and types, three runs each, and prints
 * {@code rank R: N runs checked, W wrong}; exits 1 when an element was wrong.
 */
public final class HostCollectiveRankMain {

    private HostCollectiveRankMain() {
    }

    public static void main(String[] args) {
        RankEnvironment env = RankEnvironment.fromEnvironment();
        Duration timeout = Duration.ofSeconds(30);
        long runs = 0;
        long wrong = 0;
        try (HostBackend backend = HostBackend.open();
             TcpBootstrap bs = TcpBootstrap.create(env.rank(), env.worldSize(), BootstrapOptions.fromEnvironment())) {
            Blocking.done(bs.initialize(env.rootAddress()), timeout, env.rank(), "initialize");
            try (Communicator comm = Communicator.create(bs, backend)) {
                CollectiveSetup setup = new CollectiveSetup(comm, 1 << 18, timeout);
                for (String name : args) {
                    String[] parts = name.split("/");
                    CollectiveAlgorithms.Entry entry = CollectiveAlgorithms.find(CollectiveKind.valueOf(parts[0]),
                            "host", parts[1]).orElseThrow();
                    try (Collective c = entry.factory().apply(setup); CollectiveData data = CollectiveData.create(c,
                            setup)) {
                        for (DataType type : new DataType[] {DataType.FLOAT16, DataType.INT32}) {
                            for (long count : new long[] {3, 5001}) {
                                for (int run = 0; run < 3; run++) {
                                    long seed = CollectiveValues.mix(count * 31 + run + 7L * type.ordinal());
                                    boolean inPlace = c.kind().hasInPlace() && run == 1;
                                    data.prepare(count, type, inPlace, seed);
                                    c.enqueue(count, type, inPlace);
                                    c.synchronize(timeout);
                                    wrong += data.check(count, type, inPlace, seed);
                                    runs++;
                                }
                            }
                        }
                        Blocking.done(bs.barrier(timeout), timeout, env.rank(), "after " + name);
                    }
                }
            }
        }
        System.out.println("rank " + env.rank() + ": " + runs + " runs checked, " + wrong + " wrong");
        System.out.flush();
        System.exit(wrong == 0 ? 0 : 1);
    }
}
