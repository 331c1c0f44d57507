package org.jmscclpp.core.spi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Bounds-checked little-endian reading of bytes that came from a peer: every read that would run
 * past the end, and every value a caller rejects, becomes {@link ErrorCode#INVALID_USAGE} naming
 * what was being read and where, so untrusted input can never cause an out-of-bounds read.
 */
public final class WireReader {

    private final ByteBuffer in;
    private final String what;

    public WireReader(byte[] bytes, String what) {
        this.in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        this.what = what;
    }

    int position() {
        return in.position();
    }

    int remaining() {
        return in.remaining();
    }

    public int u8(String field) {
        need(1, field);
        return in.get() & 0xFF;
    }

    public int u16(String field) {
        need(2, field);
        return in.getShort() & 0xFFFF;
    }

    public int i32(String field) {
        need(4, field);
        return in.getInt();
    }

    public long i64(String field) {
        need(8, field);
        return in.getLong();
    }

    public byte[] bytes(int n, String field) {
        need(n, field);
        byte[] out = new byte[n];
        in.get(out);
        return out;
    }

    /** Fails unless every byte was consumed. */
    public void end() {
        if (in.hasRemaining()) {
            throw invalid(in.remaining() + " unexpected bytes after the last field at offset " + in.position());
        }
    }

    JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "malformed " + what + ": " + detail)
                .phase("deserialize " + what).build();
    }

    public void check(boolean ok, String detail) {
        if (!ok) {
            throw invalid(detail);
        }
    }

    private void need(int n, String field) {
        if (n < 0 || in.remaining() < n) {
            throw invalid("truncated at offset " + in.position() + " reading " + field + " (" + n
                    + " bytes needed, " + in.remaining() + " left)");
        }
    }

    public static ByteBuffer writer(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The two wire fields of a device: type (0 CPU, 1 GPU) as u16 and id as signed i16. */
    public static void putDevice(ByteBuffer out, Device device) {
        out.putShort((short) device.type().ordinal());
        out.putShort((short) device.id());
    }

    public Device device() {
        int type = u16("device type");
        int id = (short) u16("device id");
        check(type < DeviceType.values().length, "device type " + type + " is neither CPU (0) nor GPU (1)");
        check(id >= -1, "device id " + id + " is below -1");
        return new Device(DeviceType.values()[type], id);
    }
}
