package org.jmscclpp.core.spi;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * 64-bit identities of this host and of this process, in the sense MSCCL++ gives its
 * {@code hostHash} and {@code pidHash}: two ranks with equal {@link #hostHash()} share a kernel
 * (and so can share memory), two with equal {@link #pidHash()} as well are one process.
 *
 * <ul>
 *   <li>{@link #hostHash()} hashes the host name followed by the kernel's boot id
 *       ({@code /proc/sys/kernel/random/boot_id}), so a host that reboots, or a container that
 *       reuses a host name on another machine, gets a new identity. When the environment variable
 *       {@code MSCCLPP_HOSTID} is set (and not blank), only its value is hashed: that lets a job
 *       group or split hosts on purpose, for example to emulate several hosts on one machine.</li>
 *   <li>{@link #pidHash()} hashes the process id followed by the target of the
 *       {@code /proc/self/ns/pid} link, so equal pids in different pid namespaces (containers)
 *       differ.</li>
 * </ul>
 *
 * <p>The hash is the first 8 bytes of the SHA-256 digest of the UTF-8 input, read as a
 * little-endian {@code long}. The parts of an input are separated by a NUL byte, which no host
 * name, boot id or environment value contains, so an {@code MSCCLPP_HOSTID} value never collides
 * with a host name plus boot id by accident. The values are not compatible with MSCCL++'s DJB2a
 * hashes; they are only compared among jmscclpp processes.
 *
 * <p>Both values are computed on first use and cached for the life of the JVM. A file that cannot
 * be read (a system without {@code /proc}) counts as empty, so these methods never fail.
 */
public final class HostIdentity {

    /** Environment variable that replaces host name and boot id in {@link #hostHash()}. */
    public static final String HOST_ID_ENV = "MSCCLPP_HOSTID";

    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final Path HOST_NAME = Path.of("/proc/sys/kernel/hostname");
    private static final Path PID_NAMESPACE = Path.of("/proc/self/ns/pid");

    private HostIdentity() {
    }

    /** Lazily computed once: the class initialiser runs on first access, under the JVM's class-init lock. */
    private static final class Cached {
        static final long HOST = hostHash(hostName(), bootId(), System.getenv(HOST_ID_ENV));
        static final long PID = pidHash(ProcessHandle.current().pid(), pidNamespace());
    }

    /** This host's identity: equal on every process of one booted kernel (or of one {@code MSCCLPP_HOSTID}). */
    public static long hostHash() {
        return Cached.HOST;
    }

    /** This process's identity: differs between processes, including equal pids in different pid namespaces. */
    public static long pidHash() {
        return Cached.PID;
    }

    /**
     * The host hash of the given inputs: of {@code hostIdEnv} alone when it is non-null and not
     * blank, else of {@code hostName} and {@code bootId} (a null boot id counts as empty;
     * surrounding whitespace, such as the newline {@code /proc} ends the file with, is dropped).
     */
    static long hostHash(String hostName, @Nullable String bootId, @Nullable String hostIdEnv) {
        if (hostIdEnv != null && !hostIdEnv.isBlank()) {
            return hash64(hostIdEnv.strip());
        }
        return hash64(hostName.strip() + '\0' + (bootId == null ? "" : bootId.strip()));
    }

    /** The pid hash of the given inputs; a null namespace counts as empty. */
    static long pidHash(long pid, @Nullable String pidNamespace) {
        return hash64(Long.toString(pid) + '\0' + (pidNamespace == null ? "" : pidNamespace.strip()));
    }

    /** First 8 bytes of SHA-256 of the UTF-8 bytes of {@code text}, little-endian. */
    static long hash64(String text) {
        byte[] digest = sha256().digest(text.getBytes(StandardCharsets.UTF_8));
        long h = 0;
        for (int i = 7; i >= 0; i--) {
            h = (h << 8) | (digest[i] & 0xFF);
        }
        return h;
    }

    /**
     * The kernel's host name (what {@code gethostname} returns, without a DNS lookup), falling back
     * to Java's local host name and finally to the empty string.
     */
    static String hostName() {
        String name = readOrNull(HOST_NAME);
        if (name != null && !name.isBlank()) {
            return name.strip();
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            // A host without a resolvable name still gets a stable (boot-id based) identity.
            return "";
        }
    }

    /** The pid namespace of this process, for example {@code pid:[4026531836]}, or null where it cannot be read. */
    static @Nullable String pidNamespace() {
        try {
            return Files.readSymbolicLink(PID_NAMESPACE).toString();
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return null;
        }
    }

    /** The boot id of the running kernel, or null where it cannot be read. */
    static @Nullable String bootId() {
        return readOrNull(BOOT_ID);
    }

    private static @Nullable String readOrNull(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | SecurityException e) {
            return null;
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            // Every Java SE platform must provide SHA-256 (MessageDigest Javadoc).
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "SHA-256 is missing from this JVM")
                    .phase("host identity").cause(e).build();
        }
    }
}
