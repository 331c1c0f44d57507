package org.jmscclpp.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.jmscclpp.bench.BenchRankSample;
import org.jmscclpp.bench.CollBenchRankSample;
import org.jmscclpp.bench.CudaProxyBenchRankSample;
import org.jmscclpp.bench.EthernetBenchRankSample;
import org.jmscclpp.bench.ProxyBenchRankSample;
import org.jmscclpp.bench.WriteBenchRankSample;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.samples.BootstrapDemo;
import org.jmscclpp.samples.CollectiveSample;
import org.jmscclpp.samples.MeshDemo;
import org.jmscclpp.samples.OverlapSample;
import org.jmscclpp.samples.PortChannelDemo;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.ShuffleSample;
import org.jmscclpp.samples.TrainStepSample;

/** The one place where sample names are bound to implementations. */
final class Samples {

    /** A registered sample; internal ones serve tests and benchmarks and are left out of the usage text. */
    record Entry(String name, String synopsis, boolean internal, Sample sample) {
    }

    private static final Map<String, Entry> ALL = new LinkedHashMap<>();

    static {
        add(new Entry("bootstrap-demo", "initialize a TcpBootstrap, allGather (rank, pid, host), barrier",
                false, new BootstrapDemo()));
        for (CollectiveKind kind : CollectiveSample.KINDS) {
            add(new Entry(CollectiveSample.name(kind), CollectiveSample.synopsis(kind), false,
                    new CollectiveSample(kind)));
        }
        add(new Entry(MeshDemo.NAME, "the README's communicator pipeline as one Mono: mesh over HOST_IPC, write, "
                + "signal, wait, check", false, new MeshDemo()));
        add(new Entry(PortChannelDemo.NAME, "the README's proxy example: port channels, a Java kernel puts and "
                + "flushes, flush completions drive a barrier, check", false, new PortChannelDemo()));
        add(new Entry(OverlapSample.NAME, OverlapSample.SYNOPSIS, false, new OverlapSample()));
        add(new Entry(ShuffleSample.NAME, ShuffleSample.SYNOPSIS, false, new ShuffleSample()));
        add(new Entry(TrainStepSample.NAME, TrainStepSample.SYNOPSIS, false, new TrainStepSample()));
        add(new Entry(ExitCodeSample.EXIT_CODE, "CODES [TEXT]: exit with CODES[rank] (comma list, last repeats;"
                + " 'wait' waits " + ExitCodeSample.WAIT_LIMIT.toSeconds() + " s to be killed)",
                true, ExitCodeSample.exitCode()));
        add(new Entry(ExitCodeSample.WAIT_FOREVER, "wait to be killed (gives up after "
                + ExitCodeSample.WAIT_LIMIT.toSeconds() + " s, exit 124)", true, ExitCodeSample.waitForever()));
        add(new Entry(BenchRankSample.NAME, "one rank of 'jmscclpp bench bootstrap' in separate processes",
                true, new BenchRankSample()));
        add(new Entry(WriteBenchRankSample.NAME, "one of the two ranks of 'jmscclpp bench write'", true,
                new WriteBenchRankSample()));
        add(new Entry(EthernetBenchRankSample.NAME, "one of the two ranks of 'jmscclpp bench ethernet'", true,
                new EthernetBenchRankSample()));
        add(new Entry(ProxyBenchRankSample.NAME, "one of the two ranks of 'jmscclpp bench proxy'", true,
                new ProxyBenchRankSample()));
        add(new Entry(CollBenchRankSample.NAME, "one rank of 'jmscclpp bench coll'", true,
                new CollBenchRankSample()));
        add(new Entry(CudaProxyBenchRankSample.NAME, "one of the two ranks of 'jmscclpp bench proxy --backend cuda'",
                true, new CudaProxyBenchRankSample()));
    }

    private Samples() {
    }

    private static void add(Entry e) {
        ALL.put(e.name(), e);
    }

    static Optional<Entry> find(String name) {
        return Optional.ofNullable(ALL.get(name));
    }

    /** Every sample in registration order. */
    static Iterable<Entry> all() {
        return ALL.values();
    }
}
