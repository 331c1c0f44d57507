package org.jmscclpp.core.metrics.probe;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;
import org.jmscclpp.core.metrics.JmscclppMetrics;

/** {@value JmscclppMetrics#PROXY_STATISTICS_EVENT}: one running proxy's fifo and trigger counts. */
@Name(JmscclppMetrics.PROXY_STATISTICS_EVENT)
@Label("Proxy Statistics")
@Category({"jmscclpp", "Proxy"})
@Description("A running proxy service: its fifo's occupancy and the triggers its loop handled")
@Period("1 s")
@StackTrace(false)
final class ProxyStatisticsEvent extends Event {

    @Label("Proxy")
    String proxy;

    @Label("Fifo Capacity")
    int fifoCapacity;

    @Label("Fifo Occupancy")
    @Description("Triggers pushed and not yet handled; -1 where the head is in device memory")
    long fifoOccupancy;

    @Label("DATA Triggers")
    long dataTriggers;

    @Label("FLAG Triggers")
    long flagTriggers;

    @Label("SYNC Triggers")
    long syncTriggers;

    @Label("Triggers")
    long triggers;
}
