package org.jmscclpp.core.log;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.testkit.CommunicatorGroup;
import reactor.core.publisher.Mono;

/**
 * A real job of two ranks in one JVM, through every setup phase that logs a line: the backend choice, a
 * communicator mesh over {@code HOST_IPC}, a proxy started and stopped, a collective communicator and one
 * allReduce. {@link #main} runs it in a child JVM ({@code args[0]}: the shared-memory directory) and
 * prints {@code JOB DONE} on stdout; {@link #run} runs it in the calling JVM.
 */
final class LoggedJob {

    static final String DONE = "JOB DONE";
    private static final Duration WAIT = Duration.ofSeconds(30);

    private LoggedJob() {
    }

    public static void main(String[] args) {
        run(Path.of(args[0]));
        System.out.println(DONE);
        System.out.flush();
        System.exit(0);
    }

    static void run(Path shmDir) {
        try (Backend chosen = Backends.best()) {
            chosen.name();
        }
        try (CommunicatorGroup g = new CommunicatorGroup(2, shmDir)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            List<RegisteredMemory> mems = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                bufs.add(g.backend.allocate(1024));
                mems.add(g.comm(r).registerMemory(bufs.get(r), TransportFlags.of(Transport.HOST_IPC)));
            }
            g.onEveryRank(r -> g.comm(r).mesh(mems.get(r), EndpointConfig.of(Transport.HOST_IPC)));
            try (ProxyService proxy = ProxyService.builder(g.backend).build()) {
                proxy.start();
                proxy.stop().block(WAIT);
            }
            List<CollectiveComm> comms = g.onEveryRank(r -> CollectiveComm.create(g.comm(r)));
            try {
                g.onEveryRank(r -> comms.get(r).allReduce(bufs.get(r), bufs.get(r), 16, DataType.FLOAT32, ReduceOp.SUM)
                        .then(Mono.just(r)));
            } finally {
                comms.forEach(CollectiveComm::close);
                bufs.forEach(DeviceBuffer::close);
            }
        }
    }
}
