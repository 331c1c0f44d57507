package org.jmscclpp.core.spi;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * Text files that ship inside the jars (kernel sources, device headers, tuning tables). Public for
 * the other modules; not an application API.
 */
public final class ClassPathResources {

    private ClassPathResources() {
    }

    /**
     * The UTF-8 text of the resource {@code path}, read from {@code in} and closed. The caller opens the stream with
     * {@code Owner.class.getResourceAsStream("/" + path)} in its own module: on the module path a module's resources
     * are encapsulated, so only its own code (not this class's module) can open them.
     *
     * @param in    the resource's stream; null when it was not found
     * @param what  what the file is, for errors ({@code "kernel source"}, {@code "tuning table"})
     * @param phase the phase errors name
     * @throws JmscclppException SYSTEM_ERROR naming the file when it is missing or unreadable
     */
    public static String text(@Nullable InputStream in, String path, String what, String phase) {
        if (in == null) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the " + what + " " + path
                    + " is not on the class path").phase(phase).build();
        }
        try (InputStream stream = in) {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot read the " + what + " " + path)
                    .phase(phase).cause(e).build();
        }
    }
}
