import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;

/** Temporary (not committed): the bench's FIFO row on one GPU, for an A/B of two push kernels. */
public class FifoAB {
    public static void main(String[] a) throws Exception {
        int rounds = Integer.parseInt(a[0]);
        int warmup = Integer.parseInt(a[1]);
        int iters = Integer.parseInt(a[2]);
        try (CudaBackend backend = CudaBackend.open(0, CudaBackend.Allocation.MEM_ALLOC)) {
            System.out.println("on " + backend);
            for (int r = 1; r <= rounds; r++) {
                for (int k = 3; k < a.length; k++) {
                    Kernel push = DeviceKernels.load(backend, "fifo").function(a[k]);
                    run(backend, push, warmup);
                    long[] ns = run(backend, push, iters);
                    System.out.printf("round %d %-18s kernel %.3f us/trigger, wall %.3f us/trigger%n", r, a[k],
                            ns[0] / 1e3 / iters, ns[1] / 1e3 / iters);
                }
            }
        }
    }

    static long[] run(CudaBackend backend, Kernel push, int n) throws Exception {
        try (Fifo fifo = Fifo.create(backend, 512); DeviceBuffer elapsed = backend.allocateHostVisible(8)) {
            long[] t = new long[2];
            long start = System.nanoTime();
            CompletableFuture<Void> kernel = push.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                    .handle(Fifo.DEVICE_HANDLE_BYTES, fifo::encodeDeviceHandle).i64(n).pointer(elapsed.address())
                    .build(), Duration.ofSeconds(60)).toFuture();
            for (int i = 0; i < n; i++) {
                if (!Waiting.await(() -> fifo.poll(t), System.nanoTime() + 10_000_000_000L)) {
                    throw new IllegalStateException("no trigger at " + i);
                }
                if (t[0] != i || t[1] != i) {
                    throw new IllegalStateException("trigger " + i + " reads " + t[0] + "," + t[1]);
                }
                fifo.pop();
            }
            long wall = System.nanoTime() - start;
            kernel.get();
            return new long[] {elapsed.hostSegment().get(ValueLayout.JAVA_LONG, 0), wall};
        }
    }
}
