package org.jmscclpp.core.log;

import java.text.MessageFormat;
import java.util.ResourceBundle;
import java.util.function.Supplier;

/**
 * An application's own {@link System.LoggerFinder} (as SLF4J's or Log4j's bridge would be): it prints
 * {@code FINDER LEVEL logger: message} on stdout for every record of INFO and above. Installed in a child
 * JVM by a {@code META-INF/services} file the test writes; public for the service loader.
 */
public final class RecordingLoggerFinder extends System.LoggerFinder {

    @Override
    public System.Logger getLogger(String name, Module module) {
        return new System.Logger() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public boolean isLoggable(Level level) {
                return level.getSeverity() >= Level.INFO.getSeverity();
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
                print(level, msg);
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String format, Object... params) {
                print(level, params == null || params.length == 0 ? format : MessageFormat.format(format, params));
            }

            @Override
            public void log(Level level, Supplier<String> supplier) {
                if (isLoggable(level)) {
                    print(level, supplier.get());
                }
            }

            private void print(Level level, String msg) {
                if (isLoggable(level)) {
                    System.out.println("FINDER " + level + " " + name + ": " + msg);
                }
            }
        };
    }
}
