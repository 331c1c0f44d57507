package org.jmscclpp.cuda.kernel;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.StringJoiner;
import java.util.function.Consumer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The parameters of one kernel launch, in the order the kernel declares them, marshalled the
 * way {@code cuLaunchKernel} takes them: a {@code void*[]} whose slot <i>i</i> points at the
 * value of parameter <i>i</i>.
 *
 * <p>Everything lives in one native block: first the values, each at an offset that is a
 * multiple of its alignment (the block's start is aligned to the largest alignment), then the
 * pointer array, 8-byte aligned. Scalars are in the host's byte order, which is the GPU's
 * (little-endian); structs are copied as given. The driver copies the values at launch, so one
 * {@code KernelArgs} may serve any number of launches, concurrent ones included; the block is
 * freed when the object becomes unreachable. Immutable and thread-safe.
 *
 * <pre>{@code
 * KernelArgs args = KernelArgs.builder()
 *         .pointer(buffer.address())
 *         .i64(count)
 *         .handle(PortChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
 *         .build();
 * }</pre>
 */
public final class KernelArgs {

    /** The largest alignment {@link Builder#bytes} takes. */
    public static final int MAX_ALIGNMENT = 256;

    private static final KernelArgs NONE = builder().build();

    private final Memory block;
    private final long base;
    private final long[] offsets;
    private final int[] sizes;
    private final long arrayOffset;
    /** The values, for {@link #toString()}: described only when an error or a log asks (launches are hot). */
    private final List<Value> values;

    private KernelArgs(List<Value> values) {
        int maxAlignment = Native.POINTER_SIZE;
        long end = 0;
        offsets = new long[values.size()];
        sizes = new int[values.size()];
        for (int i = 0; i < values.size(); i++) {
            Value v = values.get(i);
            maxAlignment = Math.max(maxAlignment, v.alignment());
            offsets[i] = alignUp(end, v.alignment());
            sizes[i] = v.bytes().length;
            end = offsets[i] + sizes[i];
        }
        this.values = values;
        arrayOffset = alignUp(end, Native.POINTER_SIZE);
        // a zero-parameter launch still gets a valid (never read) array, so the pointer is never NULL
        long used = arrayOffset + (long) Math.max(1, values.size()) * Native.POINTER_SIZE;
        // malloc promises 16-byte alignment, not MAX_ALIGNMENT: over-allocate and shift
        block = new Memory(used + maxAlignment - 1);
        base = alignUp(Pointer.nativeValue(block), maxAlignment) - Pointer.nativeValue(block);
        block.clear();
        for (int i = 0; i < values.size(); i++) {
            byte[] bytes = values.get(i).bytes();
            block.write(base + offsets[i], bytes, 0, bytes.length);
            block.setPointer(base + arrayOffset + (long) i * Native.POINTER_SIZE, block.share(base + offsets[i]));
        }
    }

    /** A builder with no parameters yet. */
    public static Builder builder() {
        return new Builder();
    }

    /** The arguments of a kernel that takes no parameters. */
    public static KernelArgs none() {
        return NONE;
    }

    /** Number of parameters. */
    public int count() {
        return offsets.length;
    }

    /**
     * Overwrites the value of parameter {@code index} with {@code value}, which must have its size:
     * a launch copies the parameters, so one KernelArgs can serve every launch of a kernel whose
     * values change from call to call, with no allocation. Not thread-safe: whoever shares an
     * instance serializes its {@code set}s and launches.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for an index out of range or a value
     *                           of another size
     */
    public void set(int index, byte[] value) {
        if (index < 0 || index >= sizes.length || value.length != sizes[index]) {
            throw Builder.invalid("parameter " + index + " of " + sizes.length + " takes " + (index < 0
                    || index >= sizes.length ? "nothing" : sizes[index] + " bytes") + ", not " + value.length);
        }
        block.write(base + offsets[index], value, 0, value.length);
    }

    /** The {@code void**} for {@code cuLaunchKernel}; valid while this object is reachable. */
    Pointer params() {
        return block.share(base + arrayOffset);
    }

    /** Where the value of parameter {@code index} lies in the block, relative to the aligned start. */
    long offset(int index) {
        return offsets[index];
    }

    /** Bytes of parameter {@code index}. */
    int size(int index) {
        return sizes[index];
    }

    /** The aligned start of the block: the values begin here. */
    Pointer values() {
        return block.share(base);
    }

    /** Where the pointer array begins, relative to the aligned start. */
    long arrayOffset() {
        return arrayOffset;
    }

    private static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    /** The parameters as a C call would list them: {@code (ptr 0x7f.., i32 5, 40 bytes)}. */
    @Override
    public String toString() {
        StringJoiner text = new StringJoiner(", ", "(", ")");
        values.forEach(v -> text.add(v.description()));
        return text.toString();
    }

    private record Value(byte[] bytes, int alignment, String description) {
    }

    /**
     * Adds parameters in order; {@link #build()} marshals them. Not thread-safe; each method
     * returns this builder.
     */
    public static final class Builder {
        private final List<Value> values = new ArrayList<>();

        private Builder() {
        }

        /** A device pointer ({@code T*}): 8 bytes, 8-aligned. */
        public Builder pointer(long address) {
            return scalar(8, buffer(8).putLong(address), "ptr 0x" + Long.toHexString(address));
        }

        /**
         * A {@code jmscclpp::AbortFlag} (the device side of {@link DeviceAbortFlag}: one pointer, 8
         * bytes, 8-aligned): the waits of the device API given it return once the job is aborted
         * instead of running to their deadline.
         */
        public Builder abortFlag(DeviceAbortFlag flag) {
            long address = flag.address();
            return scalar(8, buffer(8).putLong(address), "abort flag 0x" + Long.toHexString(address));
        }

        /** An {@code int} (or {@code unsigned}): 4 bytes, 4-aligned. */
        public Builder i32(int value) {
            return scalar(4, buffer(4).putInt(value), "i32 " + value);
        }

        /** A {@code long long} (or {@code size_t}, {@code uint64_t}): 8 bytes, 8-aligned. */
        public Builder i64(long value) {
            return scalar(8, buffer(8).putLong(value), "i64 " + value);
        }

        /** A {@code float}: 4 bytes, 4-aligned. */
        public Builder f32(float value) {
            return scalar(4, buffer(4).putFloat(value), "f32 " + value);
        }

        /** A {@code double}: 8 bytes, 8-aligned. */
        public Builder f64(double value) {
            return scalar(8, buffer(8).putDouble(value), "f64 " + value);
        }

        /**
         * A struct passed by value, as its bytes (copied now) and its C alignment.
         *
         * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code struct} is empty,
         *                           {@code alignment} is not a power of two up to
         *                           {@value #MAX_ALIGNMENT}, or the size is not a multiple of the
         *                           alignment (C never makes such a struct)
         */
        public Builder bytes(byte[] struct, int alignment) {
            Objects.requireNonNull(struct, "struct");
            if (alignment <= 0 || alignment > MAX_ALIGNMENT || Integer.bitCount(alignment) != 1) {
                throw invalid("alignment " + alignment + " is not a power of two up to " + MAX_ALIGNMENT);
            }
            if (struct.length == 0 || struct.length % alignment != 0) {
                throw invalid("a struct of " + struct.length + " bytes cannot have alignment " + alignment
                        + ": its size must be a positive multiple of it");
            }
            values.add(new Value(struct.clone(), alignment, struct.length + " bytes"));
            return this;
        }

        /**
         * A device handle written by one of the core's encoders (for example
         * {@code Fifo::encodeDeviceHandle}): hands {@code encoder} a little-endian buffer of
         * {@code size} bytes, checks that it wrote exactly that many, and adds them with 8-byte
         * alignment (every handle starts with a 64-bit field).
         *
         * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the encoder wrote fewer or
         *                           more bytes than {@code size}, or {@code size} is not a positive
         *                           multiple of 8; whatever the encoder throws
         */
        public Builder handle(int size, Consumer<ByteBuffer> encoder) {
            Objects.requireNonNull(encoder, "encoder");
            if (size <= 0 || size % 8 != 0) {
                throw invalid("a device handle of " + size + " bytes: the size must be a positive multiple of 8");
            }
            ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            try {
                encoder.accept(out);
            } catch (BufferOverflowException e) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the device handle encoder wrote more than "
                        + size + " bytes").phase("launch").cause(e).build();
            }
            if (out.position() != size) {
                throw invalid("the device handle encoder wrote " + out.position() + " bytes, not " + size);
            }
            values.add(new Value(out.array(), 8, "handle of " + size + " bytes"));
            return this;
        }

        /** The parameters added so far, marshalled into native memory. */
        public KernelArgs build() {
            return new KernelArgs(List.copyOf(values));
        }

        private static ByteBuffer buffer(int size) {
            return ByteBuffer.allocate(size).order(ByteOrder.nativeOrder());
        }

        private Builder scalar(int alignment, ByteBuffer value, String description) {
            values.add(new Value(value.array(), alignment, description));
            return this;
        }

        private static JmscclppException invalid(String why) {
            return JmscclppException.builder(ErrorCode.INVALID_USAGE, "kernel argument: " + why).phase("launch").build();
        }
    }
}
