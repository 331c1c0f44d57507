package org.jmscclpp.samples;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/**
 * The project's version as the build wrote it into {@code version.properties} (a filtered resource
 * of this jar, so it is the same from {@code bin/jmscclpp}, from the bundle and from a test's class
 * path): what {@code jmscclpp --version} and every command's {@code -V} print.
 */
public final class Version implements IVersionProvider {

    private static final String RESOURCE = "version.properties";

    /** The version, e.g. {@code 0.1.0-SNAPSHOT}. */
    public static String get() {
        try (InputStream in = Version.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing beside " + Version.class.getName()
                        + ": this jar was not built by Maven");
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
    }

    @Override
    public String[] getVersion() {
        return new String[] {"jmscclpp " + get(),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")"};
    }
}
