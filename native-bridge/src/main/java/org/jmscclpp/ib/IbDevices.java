package org.jmscclpp.ib;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.nativebridge.Verbs;
import org.jspecify.annotations.Nullable;

/**
 * Which RDMA device and port {@code IBn} means here, as MSCCL++ decides it: the n-th entry of
 * {@code MSCCLPP_HCA_DEVICES} (a comma list of device names, each with an optional
 * {@code :port}, e.g. {@code mlx5_0,mlx5_1:2}) when that is set, else the n-th device of
 * {@code ibv_get_device_list}; and {@code MSCCLPP_IB_GID_INDEX} (default 0), the GID index used on
 * RoCE ports.
 */
final class IbDevices {

    static final String HCA_ENV = "MSCCLPP_HCA_DEVICES";
    static final String GID_ENV = "MSCCLPP_IB_GID_INDEX";

    /** One entry of {@code MSCCLPP_HCA_DEVICES}: a device name and its port, -1 for "the first active one". */
    record Target(String name, int port) {
        @Override
        public String toString() {
            return port < 0 ? name : name + ":" + port;
        }
    }

    private IbDevices() {
    }

    /**
     * Parses {@code MSCCLPP_HCA_DEVICES}; blank entries are skipped; a port that is not a number in
     * [1, 255] is {@link ErrorCode#INVALID_USAGE}.
     */
    static List<Target> parse(String value) {
        List<Target> targets = new ArrayList<>();
        for (String entry : value.split(",")) {
            String e = entry.strip();
            if (e.isEmpty()) {
                continue;
            }
            int colon = e.lastIndexOf(':');
            if (colon < 0) {
                targets.add(new Target(e, -1));
                continue;
            }
            String name = e.substring(0, colon).strip();
            String port = e.substring(colon + 1).strip();
            int p;
            try {
                p = Integer.parseInt(port);
            } catch (NumberFormatException x) {
                p = -1;
                port = "'" + port + "'";
            }
            if (name.isEmpty() || p < 1 || p > 255) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, HCA_ENV + " entry '" + e
                        + "' is not NAME or NAME:PORT with a port in [1, 255]").phase("ib").build();
            }
            targets.add(new Target(name, p));
        }
        return targets;
    }

    /** {@code MSCCLPP_IB_GID_INDEX}, 0 when unset; a value that is not a number in [0, 255] is INVALID_USAGE. */
    static int gidIndex(@Nullable String value) {
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            int index = Integer.parseInt(value.strip());
            if (index >= 0 && index <= 255) {
                return index;
            }
        } catch (NumberFormatException ignored) {
            // reported below with the value
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, GID_ENV + "='" + value
                + "' is not a GID index in [0, 255]").phase("ib").build();
    }

    /** {@code ENOSYS}: what {@code ibv_get_device_list} sets where the kernel has no RDMA support at all. */
    private static final int ENOSYS = 38;

    /**
     * The names of this host's RDMA devices, in {@code ibv_get_device_list} order; empty where the
     * kernel has no RDMA support (the list call fails with ENOSYS); SYSTEM_ERROR on other failures.
     */
    static List<String> deviceNames() {
        int[] count = new int[1];
        long list = Verbs.ibv_get_device_list(count);
        if (list == 0 && com.sun.jna.Native.getLastError() == ENOSYS) {
            return List.of();
        }
        if (list == 0) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "ibv_get_device_list failed: " + Verbs.errno())
                    .phase("ib").build();
        }
        try {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < count[0]; i++) {
                names.add(Verbs.deviceName(new com.sun.jna.Pointer(list).getLong((long) i * Long.BYTES)));
            }
            return names;
        } finally {
            Verbs.ibv_free_device_list(list);
        }
    }

    /**
     * The device and port of {@code transport} given this host's devices and the value of
     * {@code MSCCLPP_HCA_DEVICES} (null when unset), or why there is none: no device at all, fewer
     * devices than the index, or a listed name no device has.
     */
    static Resolution resolve(Transport transport, List<String> devices, @Nullable String hcaDevices) {
        int index = transport.ordinal() - Transport.IB0.ordinal();
        if (devices.isEmpty()) {
            boolean sysfs = Files.isDirectory(Path.of("/sys/class/infiniband"));
            return Resolution.missing("no RDMA device: ibv_get_device_list found none (/sys/class/infiniband is "
                    + (sysfs ? "empty" : "absent") + "; load a driver, or create a soft-RoCE device with "
                    + "'rdma link add rxe0 type rxe netdev <if>')");
        }
        if (hcaDevices != null && !hcaDevices.isBlank()) {
            List<Target> targets = parse(hcaDevices);
            if (index >= targets.size()) {
                return Resolution.missing("device " + transport + " is absent: " + HCA_ENV + "='" + hcaDevices
                        + "' lists " + targets.size() + " device(s)");
            }
            Target t = targets.get(index);
            if (!devices.contains(t.name())) {
                return Resolution.missing("device " + transport + " is absent: " + HCA_ENV + " names " + t.name()
                        + ", which is not among this host's RDMA devices " + devices);
            }
            return new Resolution(t, null);
        }
        if (index >= devices.size()) {
            return Resolution.missing("device " + transport + " is absent: this host has " + devices.size()
                    + " RDMA device(s) " + devices);
        }
        return new Resolution(new Target(devices.get(index), -1), null);
    }

    /** A {@link Target}, or why there is none. */
    record Resolution(@Nullable Target target, @Nullable String missing) {
        static Resolution missing(String why) {
            return new Resolution(null, why);
        }

        Optional<String> reason() {
            return Optional.ofNullable(missing);
        }
    }
}
