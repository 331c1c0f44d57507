package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.jmscclpp.core.Transport.CUDA_IPC;
import static org.jmscclpp.core.Transport.ETHERNET;
import static org.jmscclpp.core.Transport.HOST_IPC;
import static org.jmscclpp.core.Transport.IB0;
import static org.jmscclpp.core.Transport.IB7;

import java.util.EnumSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TransportFlagsTest {

    @Test
    void algebraMatchesSetOperations() {
        Random random = new Random(42);
        Transport[] all = Transport.values();
        for (int i = 0; i < 2000; i++) {
            Set<Transport> a = randomSet(random, all);
            Set<Transport> b = randomSet(random, all);
            TransportFlags fa = TransportFlags.of(a.toArray(Transport[]::new));
            TransportFlags fb = TransportFlags.of(b.toArray(Transport[]::new));

            Set<Transport> union = EnumSet.noneOf(Transport.class);
            union.addAll(a);
            union.addAll(b);
            Set<Transport> both = EnumSet.noneOf(Transport.class);
            both.addAll(a);
            both.retainAll(b);
            Set<Transport> either = EnumSet.noneOf(Transport.class);
            either.addAll(union);
            either.removeAll(both);
            Set<Transport> complement = EnumSet.allOf(Transport.class);
            complement.removeAll(a);

            assertEquals(union, fa.or(fb).toSet());
            assertEquals(both, fa.and(fb).toSet());
            assertEquals(either, fa.xor(fb).toSet());
            assertEquals(complement, fa.not().toSet());
            assertEquals(a.size(), fa.count());
            assertEquals(a.isEmpty(), fa.none());
            assertEquals(!a.isEmpty(), fa.any());
            assertEquals(a.size() == all.length, fa.all());
            for (Transport t : all) {
                assertEquals(a.contains(t), fa.has(t));
            }
            assertEquals(fa, TransportFlags.fromBits(fa.bits()));
            assertEquals(fa.hashCode(), TransportFlags.fromBits(fa.bits()).hashCode());
        }
    }

    @Test
    void constantsAndSingleTransportOperators() {
        assertTrue(TransportFlags.NONE.none());
        assertTrue(TransportFlags.ALL.all());
        assertEquals(Transport.values().length, TransportFlags.ALL.count());
        assertEquals(8, TransportFlags.ALL_IB.count());
        assertTrue(TransportFlags.ALL_IB.has(IB0));
        assertTrue(TransportFlags.ALL_IB.has(IB7));
        assertFalse(TransportFlags.ALL_IB.has(ETHERNET));
        assertEquals(TransportFlags.of(CUDA_IPC, HOST_IPC), TransportFlags.NONE.or(HOST_IPC).or(CUDA_IPC));
        assertEquals(TransportFlags.of(HOST_IPC), TransportFlags.of(CUDA_IPC, HOST_IPC).and(HOST_IPC));
        assertEquals(TransportFlags.NONE, TransportFlags.of(CUDA_IPC).xor(CUDA_IPC));
        assertEquals(TransportFlags.ALL, TransportFlags.NONE.not());
        assertEquals("[IB0, HOST_IPC]", TransportFlags.of(HOST_IPC, IB0).toString());
    }

    @Test
    void bitsWithoutATransportAreRejected() {
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                () -> TransportFlags.fromBits(1 << Transport.values().length)).code());
        assertThrows(JmscclppException.class, () -> TransportFlags.fromBits(-1));
    }

    @Test
    void ibIndexNamesTheTransport() {
        for (int i = 0; i < 8; i++) {
            assertEquals("IB" + i, Transport.ib(i).name());
            assertTrue(Transport.ib(i).isIb());
        }
        assertFalse(HOST_IPC.isIb());
        assertThrows(JmscclppException.class, () -> Transport.ib(8));
    }

    private static Set<Transport> randomSet(Random random, Transport[] all) {
        Set<Transport> s = EnumSet.noneOf(Transport.class);
        for (Transport t : all) {
            if (random.nextBoolean()) {
                s.add(t);
            }
        }
        return s;
    }
}
