package org.jmscclpp.core.collective;

import java.util.Arrays;
import java.util.Locale;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The element types collectives move and reduce: NCCL's {@code ncclDataType_t}, with
 * {@link #code()} equal to NCCL's value (so it passes straight to NCCL and to this project's
 * kernels) and {@link #label()} the name nccl-tests gives it ({@code -d float}).
 *
 * <p>Reductions of the 8- and 16-bit floating types ({@link #FLOAT16}, {@link #BFLOAT16},
 * {@link #FP8_E4M3}, {@link #FP8_E5M2}) accumulate in fp32 and round once, to nearest even, when
 * the result is stored; {@link #FLOAT32} accumulates in fp32 and {@link #FLOAT64} in fp64. The fp8
 * types are the OCP formats NVIDIA calls {@code __nv_fp8_e4m3} (no infinities, largest finite 448)
 * and {@code __nv_fp8_e5m2} (largest finite 57344); a result beyond the largest finite value,
 * infinity included, is stored as that value with its sign (PTX's {@code satfinite}), so no
 * reduction stores an e5m2 infinity. Integer sums and products wrap around in the type's width.
 * {@link Reductions} defines every result to the bit, NaNs included, and computes it on the host.
 */
public enum DataType {
    INT8(0, 1, "int8"),
    UINT8(1, 1, "uint8"),
    INT32(2, 4, "int32"),
    UINT32(3, 4, "uint32"),
    INT64(4, 8, "int64"),
    UINT64(5, 8, "uint64"),
    FLOAT16(6, 2, "half"),
    FLOAT32(7, 4, "float"),
    FLOAT64(8, 8, "double"),
    BFLOAT16(9, 2, "bfloat16"),
    FP8_E4M3(10, 1, "f8e4m3"),
    FP8_E5M2(11, 1, "f8e5m2");

    private final int code;
    private final int bytes;
    private final String label;

    DataType(int code, int bytes, String label) {
        this.code = code;
        this.bytes = bytes;
        this.label = label;
    }

    /** NCCL's {@code ncclDataType_t} value, also what this project's kernels receive. */
    public int code() {
        return code;
    }

    /** Bytes per element: 1, 2, 4 or 8. */
    public int bytes() {
        return bytes;
    }

    /** nccl-tests' name: {@code int8}, {@code uint8}, {@code int32}, ..., {@code half}, {@code float}, {@code double}, {@code bfloat16}, {@code f8e4m3}, {@code f8e5m2}. */
    public String label() {
        return label;
    }

    /** Whether the type is a floating-point type (fp8, fp16, bf16, fp32, fp64). */
    public boolean isFloatingPoint() {
        return code >= FLOAT16.code;
    }

    /** Whether the type is a signed integer type. */
    public boolean isSignedInteger() {
        return this == INT8 || this == INT32 || this == INT64;
    }

    /** The type whose {@link #code()} is {@code code}; INVALID_USAGE for any other value. */
    public static DataType ofCode(int code) {
        for (DataType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no data type has the code " + code + " (0 to "
                + (values().length - 1) + ")").phase("data type").build();
    }

    /**
     * The type named {@code name}: nccl-tests' label ({@code float}), this enum's name
     * ({@code FLOAT32}, any case) or NCCL's short names ({@code fp16}, {@code bf16}, {@code fp32},
     * {@code fp64}, {@code e4m3}, {@code e5m2}); INVALID_USAGE listing the labels otherwise.
     */
    public static DataType parse(String name) {
        String n = name.strip().toLowerCase(Locale.ROOT);
        for (DataType t : values()) {
            if (t.label.equals(n) || t.name().toLowerCase(Locale.ROOT).equals(n)) {
                return t;
            }
        }
        DataType alias = switch (n) {
            case "fp16", "float16", "f16" -> FLOAT16;
            case "bf16" -> BFLOAT16;
            case "fp32", "f32" -> FLOAT32;
            case "fp64", "f64", "float64" -> FLOAT64;
            case "e4m3", "fp8e4m3", "fp8_e4m3" -> FP8_E4M3;
            case "e5m2", "fp8e5m2", "fp8_e5m2" -> FP8_E5M2;
            case "int", "i32" -> INT32;
            case "char", "i8" -> INT8;
            default -> null;
        };
        if (alias != null) {
            return alias;
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "unknown data type '" + name + "' (one of "
                + String.join(", ", Arrays.stream(values()).map(DataType::label).toList()) + ")")
                .phase("data type").build();
    }

    @Override
    public String toString() {
        return label;
    }
}
