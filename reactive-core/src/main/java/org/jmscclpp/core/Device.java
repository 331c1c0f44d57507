package org.jmscclpp.core;

/**
 * A processor that owns memory: a CPU (id -1, or a NUMA node where it matters) or GPU {@code id}.
 *
 * @param type CPU or GPU
 * @param id   the GPU ordinal; -1 for "the CPU" or "not chosen"
 */
public record Device(DeviceType type, int id) {

    /** The host CPU. */
    public static final Device CPU = new Device(DeviceType.CPU, -1);

    public Device {
        if (type == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a device needs a type").phase("device").build();
        }
        if (id < -1) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "device id must be -1 or an ordinal >= 0, got " + id).phase("device").build();
        }
    }

    /** GPU number {@code id} of this host. */
    public static Device gpu(int id) {
        if (id < 0) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "a GPU ordinal is >= 0, got " + id).phase("device").build();
        }
        return new Device(DeviceType.GPU, id);
    }

    @Override
    public String toString() {
        return type == DeviceType.CPU ? "CPU" : "GPU" + id;
    }
}
