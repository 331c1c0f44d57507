package org.jmscclpp.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.CollectiveRun;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Draws a {@link CollReport} as one PNG with XChart: bus bandwidth against size, and time against
 * size (log scales), one series per implementation and placement (jmscclpp out-of-place and
 * in-place, NCCL out-of-place and in-place, jmscclpp on staged buffers out-of-place, those the
 * report has).
 *
 * <p>Needs {@code java.desktop} and the XChart jar, which the GPU hosts' bundle leaves out:
 * {@link CollBench#plotUnavailableReason()} says whether they are here, and only then may this
 * class be used (it is the only class that touches XChart, so nothing else fails to load without
 * it).
 */
final class CollPlot {

    private static final int WIDTH = 900;
    private static final int HEIGHT = 600;

    private CollPlot() {
    }

    /**
     * Writes the PNG of {@code report} to {@code file} (creating its folder), under that very name: XChart's
     * file form would add {@code .png} to a name without it (and write {@code DIR.png} beside a folder).
     *
     * @throws JmscclppException SYSTEM_ERROR when the file cannot be written
     */
    static void write(CollReport report, Path file) {
        List<XYChart> charts = List.of(chart(report, "bus bandwidth (GB/s)", m -> CollReport.busbw(m,
                report.ranks()), false), chart(report, "time (µs)", CollectiveRunner.Measurement::timeUs, true));
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            try (OutputStream png = Files.newOutputStream(file)) {
                BitmapEncoder.saveBitmap(charts, 1, charts.size(), png, BitmapEncoder.BitmapFormat.PNG);
            }
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot write the plot " + file + ": " + e)
                    .phase("plot").cause(e).build();
        }
    }

    private static XYChart chart(CollReport r, String what, ToDoubleFunction<CollectiveRunner.Measurement> y,
                                 boolean logY) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT)
                .title(CollectiveRun.label(r.kind()) + " " + r.type().label() + (r.op() != null ? " " + r.op() : "")
                        + ", " + r.ranks() + " ranks, " + r.backend()
                        + " backend, " + r.host() + ": " + what)
                .xAxisTitle("size (bytes)").yAxisTitle(what).build();
        chart.getStyler().setXAxisLogarithmic(true).setYAxisLogarithmic(logY)
                .setxAxisTickLabelsFormattingFunction(CollPlot::decimalBytes)
                .setLegendPosition(Styler.LegendPosition.InsideNW).setMarkerSize(6);
        addSeries(chart, r, "jmscclpp " + r.algorithm() + " out-of-place",
                m -> m.implementation().equals(CollReport.JMSCCLPP) && !m.inPlace(), y);
        addSeries(chart, r, "jmscclpp " + r.algorithm() + " in-place",
                m -> m.implementation().equals(CollReport.JMSCCLPP) && m.inPlace(), y);
        addSeries(chart, r, "NCCL out-of-place", m -> m.implementation().equals(CollReport.NCCL) && !m.inPlace(), y);
        addSeries(chart, r, "NCCL in-place", m -> m.implementation().equals(CollReport.NCCL) && m.inPlace(), y);
        addSeries(chart, r, "jmscclpp staged out-of-place", m -> m.implementation().equals(CollReport.STAGED)
                && !m.inPlace(), y);
        return chart;
    }

    /** A log axis ticks at powers of ten: 1 kB, 10 MB (decimal units, where binary ones would not be round). */
    static String decimalBytes(double v) {
        String[] units = {"B", "kB", "MB", "GB", "TB"};
        int u = 0;
        double x = v;
        while (x >= 1000 && u < units.length - 1) {
            x /= 1000;
            u++;
        }
        return (x == Math.rint(x) ? Long.toString(Math.round(x)) : String.format(Locale.ROOT, "%.3g", x))
                + " " + units[u];
    }

    private static void addSeries(XYChart chart, CollReport r, String name,
                                  Predicate<CollectiveRunner.Measurement> which,
                                  ToDoubleFunction<CollectiveRunner.Measurement> y) {
        List<Double> xs = new ArrayList<>();
        List<Double> ys = new ArrayList<>();
        for (CollectiveRunner.Measurement m : r.rows()) {
            double v = y.applyAsDouble(m);
            // a log axis cannot show 0
            if (which.test(m) && v > 0) {
                xs.add((double) m.size());
                ys.add(v);
            }
        }
        if (!xs.isEmpty()) {
            chart.addSeries(name, xs, ys);
        }
    }
}
