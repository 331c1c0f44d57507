package org.jmscclpp.nativebridge;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * The few PMIx client calls (libpmix, PMIx 4: Debian's {@code libpmix2}) that a rank needs to share one value
 * through its launcher's PMIx server: {@code PMIx_Init}, {@code PMIx_Put}, {@code PMIx_Commit}, {@code PMIx_Fence},
 * {@code PMIx_Get}, {@code PMIx_Finalize}. Interface mapping: each runs once per job. The structures are laid out
 * by hand from {@code pmix_common.h} (x86-64): {@code pmix_proc_t} is a 256-byte namespace and a {@code uint32}
 * rank; {@code pmix_value_t} a {@code uint16} type and, at offset 8, a 24-byte union; {@code pmix_info_t} a
 * 512-byte key, {@code uint32} flags and, at offset 520, a {@code pmix_value_t}.
 */
public interface Pmix extends Library {

    /** {@code PMIX_SUCCESS}. */
    int SUCCESS = 0;
    /** {@code PMIX_ERR_TIMEOUT}. */
    int ERR_TIMEOUT = -24;
    /** {@code PMIX_GLOBAL}: share with every process of the job, on this node and others. */
    byte GLOBAL = 3;
    /** {@code PMIX_BOOL}. */
    short TYPE_BOOL = 1;
    /** {@code PMIX_INT}. */
    short TYPE_INT = 6;
    /** {@code PMIX_BYTE_OBJECT}: {@code char *bytes; size_t size}. */
    short TYPE_BYTE_OBJECT = 27;
    /** {@code PMIX_MAX_NSLEN + 1}: the namespace's bytes in a {@code pmix_proc_t}. */
    int NSPACE_BYTES = 256;
    /** {@code sizeof(pmix_proc_t)}. */
    int PROC_BYTES = 260;
    /** {@code sizeof(pmix_value_t)}. */
    int VALUE_BYTES = 32;
    /** Offset of the union in a {@code pmix_value_t}. */
    int VALUE_DATA = 8;
    /** {@code PMIX_MAX_KEYLEN + 1}: the key's bytes in a {@code pmix_info_t}. */
    int KEY_BYTES = 512;
    /** Offset of the value in a {@code pmix_info_t}. */
    int INFO_VALUE = 520;
    /** {@code sizeof(pmix_info_t)}. */
    int INFO_BYTES = INFO_VALUE + VALUE_BYTES;
    /** {@code PMIX_COLLECT_DATA}: a fence that also spreads every committed value. */
    String COLLECT_DATA = "pmix.collect";
    /** {@code PMIX_TIMEOUT}: seconds before the operation fails with {@link #ERR_TIMEOUT}. */
    String TIMEOUT = "pmix.timeout";

    int PMIx_Init(Pointer proc, Pointer info, long ninfo);

    int PMIx_Finalize(Pointer info, long ninfo);

    int PMIx_Put(byte scope, String key, Pointer value);

    int PMIx_Commit();

    int PMIx_Fence(Pointer procs, long nprocs, Pointer info, long ninfo);

    int PMIx_Get(Pointer proc, String key, Pointer info, long ninfo, PointerByReference value);

    void PMIx_Value_destruct(Pointer value);

    String PMIx_Error_string(int status);
}
