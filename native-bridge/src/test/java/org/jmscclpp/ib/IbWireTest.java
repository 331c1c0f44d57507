package org.jmscclpp.ib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.junit.jupiter.api.Test;

/** The IB byte forms, the device selection rules and their error messages; no RDMA device needed. */
class IbWireTest {

    @Test
    void memoryHandleRoundTripsAndChecksRanges() {
        IbWire.MemoryHandle h = new IbWire.MemoryHandle(0x7f00_0000_1000L, 4096, 0x1234_5678);
        byte[] bytes = h.encode();
        assertEquals(IbWire.MemoryHandle.BYTES, bytes.length);
        assertEquals(h, IbWire.MemoryHandle.decode(bytes));
        assertTrue(h.covers(0x7f00_0000_1000L, 4096));
        assertFalse(h.covers(0x7f00_0000_1000L + 1, 4096));
        assertFalse(h.covers(0x7f00_0000_0fffL, 1));
        assertThrows(JmscclppException.class, () -> IbWire.MemoryHandle.decode(new byte[19]));
    }

    @Test
    void qpInfoRoundTripsAndRejectsGarbage() {
        byte[] gid = new byte[16];
        gid[0] = (byte) 0xfe;
        gid[15] = 7;
        IbWire.QpInfo info = new IbWire.QpInfo(1, 2, 0, 3, true, 0x00ab_cdef, 0x12_3456, gid, 0x7f00_1234_0000L,
                99, 16);
        byte[] bytes = info.encode();
        assertEquals(IbWire.QpInfo.BYTES, bytes.length);
        assertEquals(info, IbWire.QpInfo.decode(bytes));
        byte[] bad = bytes.clone();
        bad[0] ^= 1;
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                () -> IbWire.QpInfo.decode(bad)).code());
        byte[] badFlags = bytes.clone();
        badFlags[11] = 2;
        assertThrows(JmscclppException.class, () -> IbWire.QpInfo.decode(badFlags));
        byte[] badPsn = bytes.clone();
        badPsn[19] = 1;
        assertThrows(JmscclppException.class, () -> IbWire.QpInfo.decode(badPsn));
        assertThrows(JmscclppException.class, () -> IbWire.QpInfo.decode(new byte[IbWire.QpInfo.BYTES + 1]));
    }

    @Test
    void hcaDevicesParseNamesAndPorts() {
        assertEquals(List.of(new IbDevices.Target("mlx5_0", -1), new IbDevices.Target("mlx5_1", 2)),
                IbDevices.parse(" mlx5_0 , mlx5_1:2,,"));
        for (String bad : List.of("mlx5_0:0", "mlx5_0:x", ":1", "mlx5_0:256")) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> IbDevices.parse(bad), bad);
            assertTrue(e.getMessage().contains(IbDevices.HCA_ENV), e.getMessage());
        }
    }

    @Test
    void gidIndexDefaultsToZero() {
        assertEquals(0, IbDevices.gidIndex(null));
        assertEquals(0, IbDevices.gidIndex(" "));
        assertEquals(3, IbDevices.gidIndex("3"));
        assertThrows(JmscclppException.class, () -> IbDevices.gidIndex("-1"));
        assertThrows(JmscclppException.class, () -> IbDevices.gidIndex("three"));
    }

    @Test
    void ibNIsTheNthListedOrPresentDevice() {
        List<String> present = List.of("mlx5_0", "mlx5_1");
        assertEquals(new IbDevices.Target("mlx5_1", -1), IbDevices.resolve(Transport.IB1, present, null).target());
        assertEquals(new IbDevices.Target("mlx5_0", 1),
                IbDevices.resolve(Transport.IB1, present, "mlx5_1,mlx5_0:1").target());
        assertTrue(IbDevices.resolve(Transport.IB2, present, null).reason().orElseThrow()
                .contains("device IB2 is absent: this host has 2 RDMA device(s) [mlx5_0, mlx5_1]"));
        assertTrue(IbDevices.resolve(Transport.IB1, present, "mlx5_0").reason().orElseThrow()
                .contains("lists 1 device(s)"));
        assertTrue(IbDevices.resolve(Transport.IB0, present, "mlx5_9").reason().orElseThrow()
                .contains("names mlx5_9, which is not among this host's RDMA devices"));
        assertTrue(IbDevices.resolve(Transport.IB0, List.of(), null).reason().orElseThrow()
                .startsWith("no RDMA device: ibv_get_device_list found none"));
    }

    @Test
    void portStatesHaveNames() {
        assertTrue(IbContext.portDown("rxe0", 1, 1).getMessage().contains("port 1 of RDMA device rxe0 is DOWN"));
        assertEquals("state 9", IbContext.stateName(9));
    }
}
