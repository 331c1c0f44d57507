package org.jmscclpp.core.log;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Prints the {@code org.jmscclpp} records that {@code MSCCLPP_DEBUG} asks for, one line each, in MSCCL++'s
 * layout: {@code host:pid:tid [rank] JMSCCLPP LEVEL message}, where the rank is taken from a message that
 * begins with {@code "rank N: "} (the library's convention) and is {@code -} otherwise; DEBUG and TRACE
 * lines carry the milliseconds since logging was set up, as MSCCL++'s TRACE lines do. INFO, DEBUG and
 * TRACE lines of a subsystem outside the mask are dropped; warnings and errors never are.
 */
final class DebugHandler extends Handler {

    /** {@code "rank N: "}, N perhaps grouped by {@link java.text.MessageFormat} ({@code 1,024}). */
    private static final Pattern RANK = Pattern.compile("rank ([0-9][0-9,.'\u00a0\u202f]*): (.*)", Pattern.DOTALL);

    private final PrintStream out;
    private final String prefix;
    private final Set<Subsystem> mask;
    private final Map<String, Subsystem> subsystems;
    private final long epoch = System.nanoTime();
    private final Formatter messages = new Formatter() {
        @Override
        public String format(LogRecord r) {
            return formatMessage(r);
        }
    };

    DebugHandler(PrintStream out, String host, long pid, Set<Subsystem> mask, Map<String, Subsystem> subsystems) {
        this.out = out;
        this.prefix = host + ":" + pid + ":";
        this.mask = mask;
        this.subsystems = subsystems;
        setLevel(Level.ALL);
    }

    @Override
    public boolean isLoggable(LogRecord r) {
        if (!super.isLoggable(r)) {
            return false;
        }
        if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
            return true;
        }
        String name = r.getLoggerName();
        Subsystem s = name == null ? null : subsystems.get(name);
        return s == null || mask.contains(s);
    }

    @Override
    public void publish(LogRecord r) {
        if (!isLoggable(r)) {
            return;
        }
        String line = format(r);
        synchronized (this) {
            out.print(line);
            out.flush();
        }
    }

    /** Prints {@code line} as it is, outside the level and the mask. */
    void print(String line) {
        synchronized (this) {
            out.println(line);
            out.flush();
        }
    }

    String format(LogRecord r) {
        String message = messages.format(r);
        String rank = "-";
        Matcher m = RANK.matcher(message);
        if (m.matches()) {
            rank = m.group(1).replaceAll("[^0-9]", "");
            message = m.group(2);
        }
        StringBuilder b = new StringBuilder(prefix.length() + message.length() + 48);
        b.append(prefix).append(r.getLongThreadID()).append(" [").append(rank).append("] JMSCCLPP ")
                .append(levelName(r.getLevel())).append(' ');
        if (r.getLevel().intValue() < Level.INFO.intValue()) {
            b.append(String.format(Locale.ROOT, "%.3f ", (System.nanoTime() - epoch) / 1e6));
        }
        b.append(message);
        Throwable t = r.getThrown();
        if (t != null) {
            StringWriter trace = new StringWriter();
            t.printStackTrace(new PrintWriter(trace));
            b.append(System.lineSeparator()).append(trace.toString().stripTrailing());
        }
        return b.append(System.lineSeparator()).toString();
    }

    private static String levelName(Level level) {
        int v = level.intValue();
        if (v >= Level.SEVERE.intValue()) {
            return "ERROR";
        }
        if (v >= Level.WARNING.intValue()) {
            return "WARN";
        }
        if (v >= Level.INFO.intValue()) {
            return "INFO";
        }
        return v >= Level.FINE.intValue() ? "DEBUG" : "TRACE";
    }

    @Override
    public void flush() {
        out.flush();
    }

    @Override
    public void close() {
        flush();
        if (out != System.err) {
            out.close();
        }
    }
}
