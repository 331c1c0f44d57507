package org.jmscclpp.cuda.kernel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.ClassPathResources;

/**
 * The CUDA device headers that kernels include: the device side of the fifo, the semaphores, the
 * packets and the channels, each with the byte layout of the Java encoder of the same name
 * ({@code org.jmscclpp.core.spi.DeviceHandles}), and the element-wise reductions of
 * {@code org.jmscclpp.core.collective.Reductions}. They are class-path resources under
 * {@value #RESOURCE_ROOT}, named as kernels include them ({@code #include "jmscclpp/jmscclpp.cuh"}),
 * and include no system or CUDA header, so NVRTC compiles them with nothing but these sources:
 * {@link #sources()} gives them as NVRTC's in-memory headers, {@link #copyTo(Path)} writes them
 * as an include root for {@code nvcc -I}.
 */
final class DeviceHeaders {

    /** The include root on the class path. */
    static final String RESOURCE_ROOT = "org/jmscclpp/cuda/kernel/include/";

    /** The header that includes all the others: what kernels include. */
    static final String MAIN = "jmscclpp/jmscclpp.cuh";

    /** Every header, each after the headers it includes. */
    static final List<String> NAMES = List.of(
            "jmscclpp/atomics.cuh",
            "jmscclpp/trigger.cuh",
            "jmscclpp/fifo.cuh",
            "jmscclpp/semaphore.cuh",
            "jmscclpp/packet.cuh",
            "jmscclpp/copy.cuh",
            "jmscclpp/port_channel.cuh",
            "jmscclpp/memory_channel.cuh",
            "jmscclpp/reduce.cuh",
            MAIN);

    private DeviceHeaders() {
    }

    /**
     * Every header's source by its include name, in the order of {@link #NAMES}; read from the
     * class path on each call.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} naming the header when a resource is
     *                           missing or cannot be read
     */
    static Map<String, String> sources() {
        Map<String, String> sources = new LinkedHashMap<>();
        for (String name : NAMES) {
            sources.put(name, read(name));
        }
        return Collections.unmodifiableMap(sources);
    }

    /**
     * Writes every header under {@code includeRoot} ({@code includeRoot/jmscclpp/fifo.cuh}, ...),
     * creating the directories and replacing files of the same names, and returns
     * {@code includeRoot}: the directory to pass as {@code -I}.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} naming the file when a header cannot
     *                           be read or written
     */
    static Path copyTo(Path includeRoot) {
        for (Map.Entry<String, String> header : sources().entrySet()) {
            Path file = includeRoot.resolve(header.getKey());
            try {
                Files.createDirectories(file.getParent());
                Files.writeString(file, header.getValue(), StandardCharsets.UTF_8);
            } catch (IOException | UncheckedIOException e) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot write the device header " + file)
                        .phase("device headers").cause(e).build();
            }
        }
        return includeRoot;
    }

    private static String read(String name) {
        return ClassPathResources.text(DeviceHeaders.class.getResourceAsStream("/" + RESOURCE_ROOT + name), RESOURCE_ROOT + name, "device header",
                "device headers");
    }
}
