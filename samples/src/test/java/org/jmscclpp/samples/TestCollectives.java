package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * Collectives for the tests of the runner, the bench and the samples, on the host backend: every
 * kind done with one bootstrap allGather of the inputs ({@value #BOOTSTRAP}), and an allreduce that
 * leaves its first output element wrong on every rank ({@value #CORRUPT}). {@link #register()} adds
 * them to {@link CollectiveAlgorithms} (after the real ones, so no default changes); rank processes
 * get them through {@link TestRankMain}.
 */
final class TestCollectives {

    static final String BOOTSTRAP = "test-bootstrap";
    static final String CORRUPT = "test-corrupt";

    private static boolean registered;

    private TestCollectives() {
    }

    static synchronized void register() {
        if (registered) {
            return;
        }
        registered = true;
        for (CollectiveKind kind : CollectiveKind.values()) {
            CollectiveAlgorithms.add(new CollectiveAlgorithms.Entry(kind, "host", BOOTSTRAP,
                    "the inputs through one bootstrap allGather", s -> new BootstrapCollective(kind, s, false)));
        }
        CollectiveAlgorithms.add(new CollectiveAlgorithms.Entry(CollectiveKind.ALLREDUCE, "host", CORRUPT,
                "an allreduce whose first element is wrong", s -> new BootstrapCollective(CollectiveKind.ALLREDUCE, s,
                        true)));
    }

    /** A kind over the bootstrap; enqueue runs it on the calling thread. */
    private static final class BootstrapCollective implements Collective {
        private final CollectiveKind kind;
        private final CollectiveSetup setup;
        private final boolean corrupt;
        private final DeviceBuffer input;
        private final DeviceBuffer output;

        BootstrapCollective(CollectiveKind kind, CollectiveSetup setup, boolean corrupt) {
            this.kind = kind;
            this.setup = setup;
            this.corrupt = corrupt;
            this.input = setup.backend().allocate(setup.maxSize());
            this.output = setup.backend().allocate(setup.maxSize());
        }

        @Override
        public CollectiveKind kind() {
            return kind;
        }

        @Override
        public String algorithm() {
            return corrupt ? CORRUPT : BOOTSTRAP;
        }

        @Override
        public long maxSize() {
            return setup.maxSize();
        }

        @Override
        public DeviceBuffer input() {
            return input;
        }

        @Override
        public DeviceBuffer output() {
            return output;
        }

        @Override
        public void enqueue(long count, DataType type, boolean inPlace) {
            int n = setup.size();
            int rank = setup.rank();
            long inBytes = kind.inputBytes(count, n, type);
            if (kind.size(count, n, type) > maxSize() || (inPlace && !kind.hasInPlace())) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot run " + count + " elements"
                        + (inPlace ? " in place" : "")).rank(rank).phase("test collective").build();
            }
            MemorySegment out = output.hostSegment();
            MemorySegment source = !inPlace ? input.hostSegment()
                    : kind == CollectiveKind.ALLGATHER ? out.asSlice(rank * inBytes) : out;
            byte[] mine = source.asSlice(0, inBytes).toArray(ValueLayout.JAVA_BYTE);
            byte[] all = Blocking.value(setup.bootstrap().allGather(mine, setup.timeout()),
                    setup.timeout().plusSeconds(5), rank, "test collective");
            MemorySegment gathered = MemorySegment.ofArray(all);
            switch (kind) {
                case ALLGATHER -> out.asSlice(0, all.length).copyFrom(gathered);
                case SENDRECV -> out.asSlice(0, inBytes).copyFrom(gathered.asSlice(Math.floorMod(rank - 1, n)
                        * inBytes, inBytes));
                case ALLTOALL -> {
                    long block = count * type.bytes();
                    for (int q = 0; q < n; q++) {
                        out.asSlice(q * block, block).copyFrom(gathered.asSlice(q * inBytes + rank * block, block));
                    }
                }
                case ALLREDUCE -> {
                    for (long i = 0; i < count; i++) {
                        double sum = 0;
                        for (int q = 0; q < n; q++) {
                            sum += read(gathered, q * count + i, type);
                        }
                        write(out, i, type, sum);
                    }
                }
            }
            if (corrupt) {
                write(out, 0, type, read(out, 0, type) + 1);
            }
        }

        private static double read(MemorySegment s, long i, DataType type) {
            return switch (type) {
                case INT32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                case FLOAT32 -> s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
                case FLOAT16 -> Float.float16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
                case BFLOAT16 -> Float.intBitsToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) << 16);
            };
        }

        private static void write(MemorySegment s, long i, DataType type, double v) {
            switch (type) {
                // through long, so the sum wraps as int32 sums do ((int) of a double saturates)
                case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (long) v);
                case FLOAT32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) v);
                case FLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16((float) v));
                case BFLOAT16 -> {
                    int bits = Float.floatToRawIntBits((float) v);
                    // round to nearest even, as the GPU's conversion does
                    s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) ((bits + 0x7fff + ((bits >>> 16) & 1))
                            >>> 16));
                }
            }
        }

        @Override
        public void synchronize(Duration timeout) {
            // enqueue ran the whole operation
        }

        @Override
        public @Nullable CudaStream stream() {
            return null;
        }

        @Override
        public void close() {
            input.close();
            output.close();
        }
    }
}
