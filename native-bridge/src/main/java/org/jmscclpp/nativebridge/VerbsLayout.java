package org.jmscclpp.nativebridge;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The x86-64 layouts of the verbs.h structures the bindings touch, and the one encoder or decoder
 * of each. Offsets are those of rdma-core's {@code <infiniband/verbs.h>} (checked byte for byte by
 * {@code VerbsLayoutTest}, which compiles a C program against the real header): a field this class
 * names is at the offset given, with the width its writer uses. Only the fields listed are written;
 * every encoder first zeroes the whole structure, so the others read as 0 (NULL, unused).
 *
 * <pre>
 *  struct              size  fields used (offset:width)
 *  ibv_context          -    ops.poll_cq 96:8, ops.post_send 208:8, ops.post_recv 216:8
 *  ibv_qp               -    context 0:8, qp_num 52:4
 *  ibv_cq               -    context 0:8
 *  ibv_mr               -    addr 16:8, length 24:8, lkey 36:4, rkey 40:4
 *  ibv_device_attr    232    max_qp_wr 112:4, max_cqe 132:4, max_qp_rd_atom 144:4, atomic_cap 164:4,
 *                            phys_port_cnt 227:1
 *  ibv_port_attr       52    state 0:4, active_mtu 8:4, lid 34:2, link_layer 46:1
 *  ibv_gid             16    raw 0:16
 *  ibv_qp_init_attr    64    send_cq 8:8, recv_cq 16:8, cap.max_send_wr 32:4, cap.max_recv_wr 36:4,
 *                            cap.max_send_sge 40:4, cap.max_recv_sge 44:4, qp_type 52:4, sq_sig_all 56:4
 *  ibv_qp_attr        144    qp_state 0:4, path_mtu 8:4, rq_psn 20:4, sq_psn 24:4, dest_qp_num 28:4,
 *                            qp_access_flags 32:4, ah_attr.grh.dgid 56:16, ah_attr.grh.sgid_index 76:1,
 *                            ah_attr.grh.hop_limit 77:1, ah_attr.dlid 80:2, ah_attr.sl 82:1,
 *                            ah_attr.is_global 85:1, ah_attr.port_num 86:1, pkey_index 120:2,
 *                            max_rd_atomic 126:1, max_dest_rd_atomic 127:1, min_rnr_timer 128:1,
 *                            port_num 129:1, timeout 130:1, retry_cnt 131:1, rnr_retry 132:1
 *  ibv_sge             16    addr 0:8, length 8:4, lkey 12:4
 *  ibv_send_wr        128    wr_id 0:8, next 8:8, sg_list 16:8, num_sge 24:4, opcode 28:4, send_flags 32:4,
 *                            imm_data 36:4, wr.rdma.remote_addr 40:8, wr.rdma.rkey 48:4,
 *                            wr.atomic.remote_addr 40:8, wr.atomic.compare_add 48:8, wr.atomic.swap 56:8,
 *                            wr.atomic.rkey 64:4
 *  ibv_recv_wr         32    wr_id 0:8, next 8:8, sg_list 16:8, num_sge 24:4
 *  ibv_wc              48    wr_id 0:8, status 8:4, opcode 12:4, vendor_err 16:4, byte_len 20:4,
 *                            imm_data 24:4, qp_num 28:4
 * </pre>
 * The rdma and atomic members of {@code ibv_send_wr.wr} are one union: an RDMA write's rkey and an
 * atomic's compare_add share offset 48.
 */
public final class VerbsLayout {

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;

    public static final long CONTEXT_OPS_POLL_CQ = 96;
    public static final long CONTEXT_OPS_POST_SEND = 208;
    public static final long CONTEXT_OPS_POST_RECV = 216;

    public static final long QP_CONTEXT = 0;
    public static final long QP_QP_NUM = 52;
    public static final long CQ_CONTEXT = 0;

    static final long MR_ADDR = 16;
    static final long MR_LENGTH = 24;
    public static final long MR_LKEY = 36;
    public static final long MR_RKEY = 40;

    public static final int DEVICE_ATTR_BYTES = 232;
    static final long DEVICE_ATTR_MAX_QP_WR = 112;
    static final long DEVICE_ATTR_MAX_CQE = 132;
    static final long DEVICE_ATTR_MAX_QP_RD_ATOM = 144;
    static final long DEVICE_ATTR_ATOMIC_CAP = 164;
    static final long DEVICE_ATTR_PHYS_PORT_CNT = 227;

    public static final int PORT_ATTR_BYTES = 52;
    static final long PORT_ATTR_STATE = 0;
    static final long PORT_ATTR_ACTIVE_MTU = 8;
    static final long PORT_ATTR_LID = 34;
    static final long PORT_ATTR_LINK_LAYER = 46;

    public static final int GID_BYTES = 16;

    public static final int QP_INIT_ATTR_BYTES = 64;
    static final long QP_INIT_ATTR_SEND_CQ = 8;
    static final long QP_INIT_ATTR_RECV_CQ = 16;
    static final long QP_INIT_ATTR_MAX_SEND_WR = 32;
    static final long QP_INIT_ATTR_MAX_RECV_WR = 36;
    static final long QP_INIT_ATTR_MAX_SEND_SGE = 40;
    static final long QP_INIT_ATTR_MAX_RECV_SGE = 44;
    static final long QP_INIT_ATTR_QP_TYPE = 52;
    static final long QP_INIT_ATTR_SQ_SIG_ALL = 56;

    public static final int QP_ATTR_BYTES = 144;
    static final long QP_ATTR_QP_STATE = 0;
    static final long QP_ATTR_PATH_MTU = 8;
    static final long QP_ATTR_RQ_PSN = 20;
    static final long QP_ATTR_SQ_PSN = 24;
    static final long QP_ATTR_DEST_QP_NUM = 28;
    static final long QP_ATTR_ACCESS_FLAGS = 32;
    static final long QP_ATTR_DGID = 56;
    static final long QP_ATTR_SGID_INDEX = 76;
    static final long QP_ATTR_HOP_LIMIT = 77;
    static final long QP_ATTR_DLID = 80;
    static final long QP_ATTR_SL = 82;
    static final long QP_ATTR_IS_GLOBAL = 85;
    static final long QP_ATTR_AH_PORT_NUM = 86;
    static final long QP_ATTR_PKEY_INDEX = 120;
    static final long QP_ATTR_MAX_RD_ATOMIC = 126;
    static final long QP_ATTR_MAX_DEST_RD_ATOMIC = 127;
    static final long QP_ATTR_MIN_RNR_TIMER = 128;
    static final long QP_ATTR_PORT_NUM = 129;
    static final long QP_ATTR_TIMEOUT = 130;
    static final long QP_ATTR_RETRY_CNT = 131;
    static final long QP_ATTR_RNR_RETRY = 132;

    public static final int SGE_BYTES = 16;
    static final long SGE_ADDR = 0;
    static final long SGE_LENGTH = 8;
    static final long SGE_LKEY = 12;

    public static final int SEND_WR_BYTES = 128;
    static final long SEND_WR_ID = 0;
    static final long SEND_WR_NEXT = 8;
    static final long SEND_WR_SG_LIST = 16;
    static final long SEND_WR_NUM_SGE = 24;
    static final long SEND_WR_OPCODE = 28;
    static final long SEND_WR_SEND_FLAGS = 32;
    static final long SEND_WR_IMM_DATA = 36;
    static final long SEND_WR_RDMA_REMOTE_ADDR = 40;
    static final long SEND_WR_RDMA_RKEY = 48;
    static final long SEND_WR_ATOMIC_REMOTE_ADDR = 40;
    static final long SEND_WR_ATOMIC_COMPARE_ADD = 48;
    static final long SEND_WR_ATOMIC_SWAP = 56;
    static final long SEND_WR_ATOMIC_RKEY = 64;

    public static final int RECV_WR_BYTES = 32;
    static final long RECV_WR_ID = 0;
    static final long RECV_WR_NEXT = 8;
    static final long RECV_WR_SG_LIST = 16;
    static final long RECV_WR_NUM_SGE = 24;

    public static final int WC_BYTES = 48;
    static final long WC_WR_ID = 0;
    static final long WC_STATUS = 8;
    static final long WC_OPCODE = 12;
    static final long WC_VENDOR_ERR = 16;
    static final long WC_BYTE_LEN = 20;
    static final long WC_IMM_DATA = 24;
    static final long WC_QP_NUM = 28;

    private VerbsLayout() {
    }

    /** What this library reads of {@code ibv_device_attr}. */
    public record DeviceAttr(int maxQpWr, int maxCqe, int maxQpRdAtom, int atomicCap, int physPortCount) {
        public static DeviceAttr decode(MemorySegment s) {
            return new DeviceAttr(s.get(U32, DEVICE_ATTR_MAX_QP_WR), s.get(U32, DEVICE_ATTR_MAX_CQE),
                    s.get(U32, DEVICE_ATTR_MAX_QP_RD_ATOM), s.get(U32, DEVICE_ATTR_ATOMIC_CAP),
                    Byte.toUnsignedInt(s.get(U8, DEVICE_ATTR_PHYS_PORT_CNT)));
        }
    }

    /** What this library reads of {@code ibv_port_attr}. */
    public record PortAttr(int state, int activeMtu, int lid, int linkLayer) {
        public static PortAttr decode(MemorySegment s) {
            return new PortAttr(s.get(U32, PORT_ATTR_STATE), s.get(U32, PORT_ATTR_ACTIVE_MTU),
                    Short.toUnsignedInt(s.get(U16, PORT_ATTR_LID)), Byte.toUnsignedInt(s.get(U8, PORT_ATTR_LINK_LAYER)));
        }
    }

    /** One {@code ibv_wc}. */
    public record Wc(long wrId, int status, int opcode, int vendorErr, int byteLen, int immData, int qpNum) {
        public static Wc decode(MemorySegment s, long offset) {
            return new Wc(s.get(U64, offset + WC_WR_ID), s.get(U32, offset + WC_STATUS), s.get(U32, offset + WC_OPCODE),
                    s.get(U32, offset + WC_VENDOR_ERR), s.get(U32, offset + WC_BYTE_LEN),
                    s.get(U32, offset + WC_IMM_DATA), s.get(U32, offset + WC_QP_NUM));
        }
    }

    /** An {@code ibv_qp_init_attr} for a reliable-connected QP with one SGE per request and no inline data. */
    public static void encodeQpInitAttr(MemorySegment s, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        s.asSlice(0, QP_INIT_ATTR_BYTES).fill((byte) 0);
        s.set(U64, QP_INIT_ATTR_SEND_CQ, sendCq);
        s.set(U64, QP_INIT_ATTR_RECV_CQ, recvCq);
        s.set(U32, QP_INIT_ATTR_MAX_SEND_WR, maxSendWr);
        s.set(U32, QP_INIT_ATTR_MAX_RECV_WR, maxRecvWr);
        s.set(U32, QP_INIT_ATTR_MAX_SEND_SGE, 1);
        s.set(U32, QP_INIT_ATTR_MAX_RECV_SGE, 1);
        s.set(U32, QP_INIT_ATTR_QP_TYPE, Verbs.QPT_RC);
        s.set(U32, QP_INIT_ATTR_SQ_SIG_ALL, 0);
    }

    /** RESET → INIT: port, pkey 0, access flags; the mask is {@link #INIT_MASK}. */
    public static void encodeQpAttrInit(MemorySegment s, int port, int access) {
        s.asSlice(0, QP_ATTR_BYTES).fill((byte) 0);
        s.set(U32, QP_ATTR_QP_STATE, Verbs.QPS_INIT);
        s.set(U16, QP_ATTR_PKEY_INDEX, (short) 0);
        s.set(U8, QP_ATTR_PORT_NUM, (byte) port);
        s.set(U32, QP_ATTR_ACCESS_FLAGS, access);
    }

    public static final int INIT_MASK = Verbs.QP_STATE | Verbs.QP_PKEY_INDEX | Verbs.QP_PORT | Verbs.QP_ACCESS_FLAGS;

    /**
     * INIT → RTR towards the peer's QP: path MTU, peer QP number and first PSN, its LID, and over
     * RoCE (or whenever {@code global}) a GRH to its GID from this port's {@code sgidIndex}; one
     * outstanding atomic or read as responder, RNR timer 12 (0.64 ms). Mask {@link #RTR_MASK}.
     */
    public static void encodeQpAttrRtr(MemorySegment s, int mtu, int destQpn, int rqPsn, int dlid, boolean global,
                                byte[] dgid, int sgidIndex, int port) {
        s.asSlice(0, QP_ATTR_BYTES).fill((byte) 0);
        s.set(U32, QP_ATTR_QP_STATE, Verbs.QPS_RTR);
        s.set(U32, QP_ATTR_PATH_MTU, mtu);
        s.set(U32, QP_ATTR_DEST_QP_NUM, destQpn);
        s.set(U32, QP_ATTR_RQ_PSN, rqPsn);
        s.set(U8, QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) 1);
        s.set(U8, QP_ATTR_MIN_RNR_TIMER, (byte) 12);
        s.set(U16, QP_ATTR_DLID, (short) dlid);
        s.set(U8, QP_ATTR_SL, (byte) 0);
        s.set(U8, QP_ATTR_AH_PORT_NUM, (byte) port);
        if (global) {
            s.set(U8, QP_ATTR_IS_GLOBAL, (byte) 1);
            MemorySegment.copy(dgid, 0, s, U8, QP_ATTR_DGID, GID_BYTES);
            s.set(U8, QP_ATTR_SGID_INDEX, (byte) sgidIndex);
            s.set(U8, QP_ATTR_HOP_LIMIT, (byte) 255);
        }
    }

    public static final int RTR_MASK = Verbs.QP_STATE | Verbs.QP_AV | Verbs.QP_PATH_MTU | Verbs.QP_DEST_QPN
            | Verbs.QP_RQ_PSN | Verbs.QP_MAX_DEST_RD_ATOMIC | Verbs.QP_MIN_RNR_TIMER;

    /** RTR → RTS: first send PSN, ack timeout 18 (~1 s), 7 retries, RNR retries forever, one outstanding atomic. */
    public static void encodeQpAttrRts(MemorySegment s, int sqPsn) {
        s.asSlice(0, QP_ATTR_BYTES).fill((byte) 0);
        s.set(U32, QP_ATTR_QP_STATE, Verbs.QPS_RTS);
        s.set(U32, QP_ATTR_SQ_PSN, sqPsn);
        s.set(U8, QP_ATTR_TIMEOUT, (byte) 18);
        s.set(U8, QP_ATTR_RETRY_CNT, (byte) 7);
        s.set(U8, QP_ATTR_RNR_RETRY, (byte) 7);
        s.set(U8, QP_ATTR_MAX_RD_ATOMIC, (byte) 1);
    }

    public static final int RTS_MASK = Verbs.QP_STATE | Verbs.QP_TIMEOUT | Verbs.QP_RETRY_CNT | Verbs.QP_RNR_RETRY
            | Verbs.QP_SQ_PSN | Verbs.QP_MAX_QP_RD_ATOMIC;

    public static void encodeSge(MemorySegment s, long offset, long addr, int length, int lkey) {
        s.set(U64, offset + SGE_ADDR, addr);
        s.set(U32, offset + SGE_LENGTH, length);
        s.set(U32, offset + SGE_LKEY, lkey);
    }

    /** An RDMA write (with immediate data when {@code opcode} says so) of the one SGE at {@code sge}. */
    public static void encodeRdmaWr(MemorySegment s, long wrId, long sge, int opcode, int flags, int imm, long remoteAddr,
                             int rkey) {
        s.asSlice(0, SEND_WR_BYTES).fill((byte) 0);
        s.set(U64, SEND_WR_ID, wrId);
        s.set(U64, SEND_WR_SG_LIST, sge);
        s.set(U32, SEND_WR_NUM_SGE, 1);
        s.set(U32, SEND_WR_OPCODE, opcode);
        s.set(U32, SEND_WR_SEND_FLAGS, flags);
        s.set(U32, SEND_WR_IMM_DATA, imm);
        s.set(U64, SEND_WR_RDMA_REMOTE_ADDR, remoteAddr);
        s.set(U32, SEND_WR_RDMA_RKEY, rkey);
    }

    /** An atomic fetch-and-add of {@code add} at the peer's {@code remoteAddr}; the old value lands in the SGE. */
    public static void encodeFetchAddWr(MemorySegment s, long wrId, long sge, int flags, long remoteAddr, long add, int rkey) {
        s.asSlice(0, SEND_WR_BYTES).fill((byte) 0);
        s.set(U64, SEND_WR_ID, wrId);
        s.set(U64, SEND_WR_SG_LIST, sge);
        s.set(U32, SEND_WR_NUM_SGE, 1);
        s.set(U32, SEND_WR_OPCODE, Verbs.WR_ATOMIC_FETCH_AND_ADD);
        s.set(U32, SEND_WR_SEND_FLAGS, flags);
        s.set(U64, SEND_WR_ATOMIC_REMOTE_ADDR, remoteAddr);
        s.set(U64, SEND_WR_ATOMIC_COMPARE_ADD, add);
        s.set(U64, SEND_WR_ATOMIC_SWAP, 0);
        s.set(U32, SEND_WR_ATOMIC_RKEY, rkey);
    }

    public static void encodeRecvWr(MemorySegment s, long offset, long wrId, long sge) {
        s.asSlice(offset, RECV_WR_BYTES).fill((byte) 0);
        s.set(U64, offset + RECV_WR_ID, wrId);
        s.set(U64, offset + RECV_WR_SG_LIST, sge);
        s.set(U32, offset + RECV_WR_NUM_SGE, 1);
    }
}
