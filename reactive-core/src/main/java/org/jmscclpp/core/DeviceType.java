package org.jmscclpp.core;

/** What kind of processor owns a buffer or runs the code at one end of a connection. */
public enum DeviceType {
    /** The host: CPU ranks of the host backend, and host-side ends of GPU jobs. */
    CPU,
    /** A GPU, numbered by its ordinal on the host. */
    GPU
}
