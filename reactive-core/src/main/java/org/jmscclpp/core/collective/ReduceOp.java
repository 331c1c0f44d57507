package org.jmscclpp.core.collective;

import java.util.Arrays;
import java.util.Locale;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The reductions of allReduce, reduceScatter and reduce: NCCL's {@code ncclRedOp_t}, with
 * {@link #code()} equal to NCCL's value.
 * <ul>
 *   <li>{@link #SUM}, {@link #PROD}: in the accumulator of the type (see {@link DataType}), in rank
 *       order; integers wrap around; a NaN result is the type's canonical quiet NaN.</li>
 *   <li>{@link #MIN}, {@link #MAX}: signed or unsigned comparison as the type says; a NaN operand
 *       makes the result NaN, as PyTorch's {@code min}/{@code max} do: the first NaN in rank order,
 *       quieted; {@code -0.0} and {@code +0.0} compare equal and the first in rank order is
 *       kept.</li>
 *   <li>{@link #AVG}: the sum divided by the number of ranks; for floating types the accumulator's
 *       sum divided in the accumulator (one division, rounded to nearest even), then rounded once
 *       to the type; for integers the wrapped sum divided with truncation toward zero (unsigned
 *       division for the unsigned types).</li>
 * </ul>
 * {@link Reductions} defines every result to the bit and computes it on the host.
 */
public enum ReduceOp {
    SUM(0, "sum"),
    PROD(1, "prod"),
    MAX(2, "max"),
    MIN(3, "min"),
    AVG(4, "avg");

    private final int code;
    private final String label;

    ReduceOp(int code, String label) {
        this.code = code;
        this.label = label;
    }

    /** NCCL's {@code ncclRedOp_t} value, also what this project's kernels receive. */
    public int code() {
        return code;
    }

    /** The name nccl-tests' {@code -o} takes: {@code sum}, {@code prod}, {@code max}, {@code min}, {@code avg}. */
    public String label() {
        return label;
    }

    /** The op whose {@link #code()} is {@code code}; INVALID_USAGE for any other value. */
    public static ReduceOp ofCode(int code) {
        for (ReduceOp op : values()) {
            if (op.code == code) {
                return op;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no reduction has the code " + code + " (0 to "
                + (values().length - 1) + ")").phase("reduce op").build();
    }

    /** The op named {@code name} (label or enum name, any case); INVALID_USAGE listing the labels otherwise. */
    public static ReduceOp parse(String name) {
        String n = name.strip().toLowerCase(Locale.ROOT);
        for (ReduceOp op : values()) {
            if (op.label.equals(n) || op.name().toLowerCase(Locale.ROOT).equals(n)) {
                return op;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "unknown reduction '" + name + "' (one of "
                + String.join(", ", Arrays.stream(values()).map(ReduceOp::label).toList()) + ")")
                .phase("reduce op").build();
    }

    @Override
    public String toString() {
        return label;
    }
}
