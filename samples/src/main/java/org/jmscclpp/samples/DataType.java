package org.jmscclpp.samples;

import java.util.Locale;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The element types collectives move and reduce, named as nccl-tests names them ({@code -d float}).
 * {@link #code()} is the value kernels and NCCL receive: it equals {@code ncclDataType_t}
 * ({@code ncclInt32} = 2, {@code ncclFloat16} = 6, {@code ncclFloat32} = 7, {@code ncclBfloat16} = 9).
 */
enum DataType {
    INT32("int32", 4, 2),
    FLOAT16("half", 2, 6),
    FLOAT32("float", 4, 7),
    BFLOAT16("bfloat16", 2, 9);

    private final String label;
    private final int bytes;
    private final int code;

    DataType(String label, int bytes, int code) {
        this.label = label;
        this.bytes = bytes;
        this.code = code;
    }

    /** The nccl-tests name: {@code float}, {@code half}, {@code bfloat16}, {@code int32}. */
    String label() {
        return label;
    }

    /** Bytes per element. */
    int bytes() {
        return bytes;
    }

    /** The {@code ncclDataType_t} value, also passed to this project's kernels. */
    int code() {
        return code;
    }

    /** The type named {@code label} (nccl-tests' names, or this enum's); INVALID_USAGE listing the names otherwise. */
    static DataType parse(String label) {
        for (DataType t : values()) {
            if (t.label.equals(label) || t.name().equalsIgnoreCase(label)) {
                return t;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "unknown data type '" + label + "' (one of float,"
                + " half, bfloat16, int32)").phase("arguments").build();
    }

    @Override
    public String toString() {
        return label.toLowerCase(Locale.ROOT);
    }
}
