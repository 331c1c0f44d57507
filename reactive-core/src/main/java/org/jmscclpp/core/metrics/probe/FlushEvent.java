package org.jmscclpp.core.metrics.probe;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;
import org.jmscclpp.core.metrics.JmscclppMetrics;

/** {@value JmscclppMetrics#FLUSH_EVENT}: one flush of a connection, from subscription to completion. */
@Name(JmscclppMetrics.FLUSH_EVENT)
@Label("Connection Flush")
@Category({"jmscclpp", "Connection"})
@Description("A flush of a jmscclpp connection: every write issued before it is visible at the peer")
@StackTrace(false)
@Threshold("1 ms")   // flushes come by the million per second: a recording lowers it to see them all
final class FlushEvent extends Event {

    @Label("Rank")
    int rank;

    @Label("Peer")
    int peer;

    @Label("Tag")
    int tag;

    @Label("Transport")
    String transport;

    @Label("Bytes")
    @Description("Bytes written on the connection between the previous flush's start and this one's")
    @DataAmount
    long bytes;

    @Label("Succeeded")
    boolean succeeded;
}
