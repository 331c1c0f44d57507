package org.jmscclpp.core.spi;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Text files that ship inside the jars (kernel sources, device headers, tuning tables). Public for
 * the other modules; not an application API.
 */
public final class ClassPathResources {

    private ClassPathResources() {
    }

    /**
     * The UTF-8 text of the resource {@code path} of {@code loader}.
     *
     * @param what  what the file is, for errors ({@code "kernel source"}, {@code "tuning table"})
     * @param phase the phase errors name
     * @throws JmscclppException SYSTEM_ERROR naming the file when it is missing or unreadable
     */
    public static String text(ClassLoader loader, String path, String what, String phase) {
        try (InputStream in = loader.getResourceAsStream(path)) {
            if (in == null) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the " + what + " " + path
                        + " is not on the class path").phase(phase).build();
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot read the " + what + " " + path)
                    .phase(phase).cause(e).build();
        }
    }
}
