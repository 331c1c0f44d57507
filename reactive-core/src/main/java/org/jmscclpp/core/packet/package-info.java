/**
 * LL8 and LL16 packets: data words carried beside a flag word, so a reader learns that the data arrived from the
 * data itself (MSCCL++'s low-latency protocols).
 */
@NullMarked
package org.jmscclpp.core.packet;

import org.jspecify.annotations.NullMarked;
