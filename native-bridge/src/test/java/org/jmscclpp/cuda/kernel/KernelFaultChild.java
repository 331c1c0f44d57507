package org.jmscclpp.cuda.kernel;

import java.nio.file.Path;
import java.time.Duration;
import org.jmscclpp.core.JmscclppException;

/**
 * Child JVM of {@link KernelGpuTest}: runs a kernel that writes through a bad address and prints
 * {@code FAULT <code> <message>} for the error its run ended with, or {@code NO FAULT}.
 */
public final class KernelFaultChild {

    private KernelFaultChild() {
    }

    public static void main(String[] args) {
        try (GpuKernels gpu = GpuKernels.open(Path.of(args[0]))) {
            gpu.module.function("fault").run(LaunchConfig.of(1, 1), KernelArgs.builder().pointer(8).build(),
                    Duration.ofSeconds(60)).block(Duration.ofSeconds(90));
            System.out.println("NO FAULT");
        } catch (JmscclppException e) {
            System.out.println("FAULT " + e.code() + " " + e.getMessage().replace('\n', ' '));
        }
    }
}
