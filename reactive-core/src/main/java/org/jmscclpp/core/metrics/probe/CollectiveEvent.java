package org.jmscclpp.core.metrics.probe;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import org.jmscclpp.core.metrics.JmscclppMetrics;

/** {@value JmscclppMetrics#COLLECTIVE_EVENT}: one collective call, from subscription to completion. */
@Name(JmscclppMetrics.COLLECTIVE_EVENT)
@Label("Collective Call")
@Category({"jmscclpp", "Collective"})
@Description("A jmscclpp collective call (a call of a group: the group's time)")
@StackTrace(false)
final class CollectiveEvent extends Event {

    @Label("Rank")
    int rank;

    @Label("Ranks")
    int ranks;

    @Label("Operation")
    String op;

    @Label("Type")
    String type;

    @Label("Count")
    long count;

    @Label("Bytes")
    @Description("The call's size: the larger of its send and receive bytes (nccl-tests' S)")
    @DataAmount
    long bytes;

    @Label("Algorithm")
    String algorithm;

    @Label("Grouped")
    boolean group;

    @Label("Succeeded")
    boolean succeeded;
}
