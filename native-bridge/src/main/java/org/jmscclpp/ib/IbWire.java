package org.jmscclpp.ib;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.VerbsLayout;

/** The two byte forms an IB transport sends to peers: a memory region's handle and a queue pair's endpoint info. */
final class IbWire {

    private IbWire() {
    }

    /**
     * What a peer needs to address a registered buffer over IB: the {@link org.jmscclpp.core.RegisteredMemory}
     * handle of an {@code IBn} transport. Little-endian, 20 bytes:
     * <pre>
     *  offset  width  field
     *       0      8  address of the region in its owner process (RDMA targets address it directly)
     *       8      8  length in bytes
     *      16      4  rkey
     * </pre>
     */
    record MemoryHandle(long address, long length, int rkey) {
        static final int BYTES = 20;

        byte[] encode() {
            return writer(BYTES).putLong(address).putLong(length).putInt(rkey).array();
        }

        static MemoryHandle decode(byte[] bytes) {
            check(bytes.length == BYTES, "an IB memory handle is " + BYTES + " bytes, got " + bytes.length);
            ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            return new MemoryHandle(in.getLong(), in.getLong(), in.getInt());
        }

        /** Whether [address, address + size) lies inside this region. */
        boolean covers(long start, long size) {
            return size >= 0 && start - address >= 0 && start - address <= length && size <= length - (start - address);
        }
    }

    /**
     * An IB endpoint's transport bytes: how the peer reaches this rank's queue pair, and where its
     * signals land in HostNoAtomic mode. Little-endian, 52 bytes:
     * <pre>
     *  offset  width  field
     *       0      4  magic 0x42494D4A ("JMIB")
     *       4      2  version, 1
     *       6      1  port number
     *       7      1  link layer (1 InfiniBand, 2 Ethernet: RoCE)
     *       8      2  LID
     *      10      1  active MTU (enum ibv_mtu: 1 = 256 ... 5 = 4096)
     *      11      1  flags: bit 0 = signal by write-with-immediate (HostNoAtomic), not by atomics
     *      12      4  QP number
     *      16      4  first packet sequence number (24 bits)
     *      20     16  GID at MSCCLPP_IB_GID_INDEX
     *      36      8  address of the signal ring (HostNoAtomic records land there)
     *      44      4  rkey of the signal ring
     *      48      4  slots in the signal ring (= receives kept posted)
     * </pre>
     */
    record QpInfo(int port, int linkLayer, int lid, int mtu, boolean noAtomic, int qpn, int psn, byte[] gid,
                  long ringAddress, int ringRkey, int ringSlots) {
        static final int BYTES = 52;
        static final int MAGIC = 0x42494D4A;
        static final int VERSION = 1;

        QpInfo {
            gid = gid.clone();
            check(gid.length == VerbsLayout.GID_BYTES, "a GID is 16 bytes");
        }

        byte[] encode() {
            return writer(BYTES).putInt(MAGIC).putShort((short) VERSION).put((byte) port).put((byte) linkLayer)
                    .putShort((short) lid).put((byte) mtu).put((byte) (noAtomic ? 1 : 0)).putInt(qpn).putInt(psn)
                    .put(gid).putLong(ringAddress).putInt(ringRkey).putInt(ringSlots).array();
        }

        static QpInfo decode(byte[] bytes) {
            check(bytes.length == BYTES, "IB endpoint info is " + BYTES + " bytes, got " + bytes.length);
            ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            int magic = in.getInt();
            check(magic == MAGIC, "magic 0x" + Integer.toHexString(magic) + " is not an IB endpoint's");
            int version = Short.toUnsignedInt(in.getShort());
            check(version == VERSION, "unknown IB endpoint version " + version);
            int port = Byte.toUnsignedInt(in.get());
            int linkLayer = Byte.toUnsignedInt(in.get());
            int lid = Short.toUnsignedInt(in.getShort());
            int mtu = Byte.toUnsignedInt(in.get());
            int flags = Byte.toUnsignedInt(in.get());
            check((flags & ~1) == 0, "unknown IB endpoint flags 0x" + Integer.toHexString(flags));
            check(mtu >= 1 && mtu <= 5, "IB MTU code " + mtu + " is not in [1, 5]");
            int qpn = in.getInt();
            int psn = in.getInt();
            check((psn & ~0xFFFFFF) == 0, "PSN " + psn + " exceeds 24 bits");
            byte[] gid = new byte[VerbsLayout.GID_BYTES];
            in.get(gid);
            long ring = in.getLong();
            int ringRkey = in.getInt();
            int slots = in.getInt();
            check(slots >= 1, "signal ring of " + slots + " slots");
            return new QpInfo(port, linkLayer, lid, mtu, (flags & 1) != 0, qpn, psn, gid, ring, ringRkey, slots);
        }

        @Override
        public byte[] gid() {
            return gid.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof QpInfo q && Arrays.equals(encode(), q.encode());
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(encode());
        }

        @Override
        public String toString() {
            return "QpInfo[qpn " + qpn + ", port " + port + ", lid " + lid + ", mtu " + mtu
                    + (noAtomic ? ", no atomics" : "") + "]";
        }
    }

    private static ByteBuffer writer(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static void check(boolean ok, String detail) {
        if (!ok) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("ib").build();
        }
    }
}
