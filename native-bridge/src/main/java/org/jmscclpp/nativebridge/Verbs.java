package org.jmscclpp.nativebridge;

import com.sun.jna.Function;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * JNA bindings to {@code libibverbs.so.1} (rdma-core), direct-mapped, every pointer a {@code long}
 * (the structures live in {@link java.lang.foreign} segments encoded by {@link VerbsLayout}).
 *
 * <p>What verbs.h makes of the exported symbols:
 * <ul>
 *   <li>{@code ibv_query_port} is a macro over an inline that calls the provider's extended
 *       {@code query_port} when it has one, else the exported {@code ibv_query_port}, which fills a
 *       {@code struct _compat_ibv_port_attr}: the {@code ibv_port_attr} fields up to
 *       {@code link_layer}, all this library reads. The exported symbol is bound, over a zeroed
 *       full-size {@code ibv_port_attr}, as the inline's fallback does.</li>
 *   <li>{@code ibv_reg_mr} is a macro that calls the exported {@code ibv_reg_mr} unless the access
 *       flags ask for {@code IBV_ACCESS_OPTIONAL_RANGE} bits, which this library never sets: the
 *       exported symbol is the one the macro would reach.</li>
 *   <li>{@code ibv_post_send}, {@code ibv_post_recv} and {@code ibv_poll_cq} are inlines that call
 *       through {@code context->ops}; {@link #opsFunction} reads those function pointers at the
 *       offsets {@link VerbsLayout} holds, and {@code org.jmscclpp.ib.IbQueuePair} calls them with JNA
 *       {@link Function}.</li>
 * </ul>
 * Functions returning a pointer return 0 on failure and set {@code errno}; functions returning
 * {@code int} return 0 or an errno value (some providers return -1 and set {@code errno}).
 */
public final class Verbs {

    /** What JNA loads: {@code ibverbs} resolves to {@code libibverbs.so.1} where only the runtime package is installed. */
    static final String LIBRARY = "libibverbs.so.1";

    // enum ibv_access_flags
    public static final int ACCESS_LOCAL_WRITE = 1;
    public static final int ACCESS_REMOTE_WRITE = 2;
    public static final int ACCESS_REMOTE_READ = 4;
    public static final int ACCESS_REMOTE_ATOMIC = 8;
    // enum ibv_qp_type
    static final int QPT_RC = 2;
    // enum ibv_qp_state
    static final int QPS_INIT = 1;
    static final int QPS_RTR = 2;
    static final int QPS_RTS = 3;
    // enum ibv_qp_attr_mask
    static final int QP_STATE = 1;
    static final int QP_ACCESS_FLAGS = 1 << 3;
    static final int QP_PKEY_INDEX = 1 << 4;
    static final int QP_PORT = 1 << 5;
    static final int QP_AV = 1 << 7;
    static final int QP_PATH_MTU = 1 << 8;
    static final int QP_TIMEOUT = 1 << 9;
    static final int QP_RETRY_CNT = 1 << 10;
    static final int QP_RNR_RETRY = 1 << 11;
    static final int QP_RQ_PSN = 1 << 12;
    static final int QP_MAX_QP_RD_ATOMIC = 1 << 13;
    static final int QP_MIN_RNR_TIMER = 1 << 15;
    static final int QP_SQ_PSN = 1 << 16;
    static final int QP_DEST_QPN = 1 << 20;
    static final int QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    // enum ibv_wr_opcode
    public static final int WR_RDMA_WRITE = 0;
    public static final int WR_RDMA_WRITE_WITH_IMM = 1;
    static final int WR_ATOMIC_FETCH_AND_ADD = 6;
    // enum ibv_send_flags
    public static final int SEND_SIGNALED = 2;
    // enum ibv_wc_status / ibv_wc_opcode
    public static final int WC_SUCCESS = 0;
    public static final int WC_RECV_RDMA_WITH_IMM = 129;
    // enum ibv_port_state
    public static final int PORT_ACTIVE = 4;
    // IBV_LINK_LAYER_*
    static final int LINK_LAYER_INFINIBAND = 1;
    public static final int LINK_LAYER_ETHERNET = 2;
    // enum ibv_atomic_cap
    public static final int ATOMIC_NONE = 0;

    private static final @Nullable String UNAVAILABLE;

    static {
        String reason = null;
        try {
            Native.register(Verbs.class, NativeLibrary.getInstance(LIBRARY));
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            reason = "libibverbs (" + LIBRARY + ") cannot be loaded: " + LibraryLookup.oneLine(e)
                    + " (install rdma-core's libibverbs1)";
        }
        UNAVAILABLE = reason;
    }

    private Verbs() {
    }

    /** Empty when libibverbs is bound; otherwise why not. */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    public static native long ibv_get_device_list(int[] numDevices);

    public static native void ibv_free_device_list(long list);

    static native long ibv_get_device_name(long device);

    public static native long ibv_open_device(long device);

    public static native int ibv_close_device(long context);

    public static native int ibv_query_device(long context, long deviceAttr);

    public static native int ibv_query_port(long context, byte port, long portAttr);

    public static native int ibv_query_gid(long context, byte port, int index, long gid);

    public static native long ibv_alloc_pd(long context);

    public static native int ibv_dealloc_pd(long pd);

    public static native long ibv_reg_mr(long pd, long addr, long length, int access);

    public static native int ibv_dereg_mr(long mr);

    public static native long ibv_create_cq(long context, int cqe, long cqContext, long channel, int compVector);

    public static native int ibv_destroy_cq(long cq);

    public static native long ibv_create_qp(long pd, long initAttr);

    public static native int ibv_destroy_qp(long qp);

    public static native int ibv_modify_qp(long qp, long attr, int attrMask);

    static native long ibv_wc_status_str(int status);

    /** {@code ibv_wc_status_str(status)} with its number, e.g. {@code "remote access error (10)"}. */
    public static String statusString(int status) {
        long text = ibv_wc_status_str(status);
        return (text == 0 ? "unknown status" : new Pointer(text).getString(0)) + " (" + status + ")";
    }

    /** The device's name ({@code mlx5_0}, {@code rxe0}). */
    public static String deviceName(long device) {
        long name = ibv_get_device_name(device);
        return name == 0 ? "?" : new Pointer(name).getString(0);
    }

    /**
     * The function pointer at {@code offset} of the ops table inside the {@code ibv_context} at
     * {@code context}, as a JNA function; {@link ErrorCode#SYSTEM_ERROR} when the provider left it empty.
     */
    public static Function opsFunction(long context, long offset, String name) {
        long fn = new Pointer(context).getLong(offset);
        if (fn == 0) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the RDMA provider has no " + name
                    + " in its ops table").phase("ib").build();
        }
        return Function.getFunction(new Pointer(fn));
    }

    /** The {@code errno} left by the last native call of this thread, in words. */
    public static String errno() {
        int e = Native.getLastError();
        return "errno " + e + (e == 0 ? "" : " (" + LibCString.text(e) + ")");
    }

    /** Throws {@link ErrorCode#SYSTEM_ERROR} naming {@code call} unless {@code rc} is 0. */
    public static void check(int rc, String call) {
        if (rc != 0) {
            int e = rc > 0 ? rc : Native.getLastError();
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, call + " failed: errno " + e + " ("
                    + LibCString.text(e) + ")").phase("ib").build();
        }
    }

    /** Returns {@code pointer}, or throws {@link ErrorCode#SYSTEM_ERROR} naming {@code call} and errno when it is 0. */
    public static long checkPointer(long pointer, String call) {
        if (pointer == 0) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, call + " failed: " + errno()).phase("ib").build();
        }
        return pointer;
    }

    /** {@code strerror} through libc, for error messages. */
    static final class LibCString {
        static {
            Native.register(LibCString.class, NativeLibrary.getInstance("c"));
        }

        private LibCString() {
        }

        private static native long strerror(int errnum);

        static String text(int errnum) {
            long text = strerror(errnum);
            return text == 0 ? "?" : new Pointer(text).getString(0);
        }
    }
}
