package org.jmscclpp.bootstrap;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link TcpBootstrap} puts in the 128 bytes of a {@link UniqueId}: where the root listens
 * and the job's secret.
 *
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      4  magic "JMID"
 *      4      2  protocol version ({@link Preamble#VERSION})
 *      6      1  address family: 4 or 6
 *      7      1  reserved, 0
 *      8     16  root IP address (IPv4 in the first 4 bytes, rest 0)
 *     24      2  root port
 *     26      2  reserved, 0
 *     28      4  IPv6 scope id (0 for IPv4)
 *     32     32  secret: 256 random bits (never sent on a connection: the handshake proves it)
 *     64     64  reserved, 0
 * </pre>
 */
record TcpUniqueId(InetSocketAddress root, byte[] secret) {

    private static final int MAGIC = 0x44494D4A; // "JMID" read little-endian
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final System.Logger LOG = Log.logger(TcpUniqueId.class, Subsystem.INIT);

    static TcpUniqueId random(InetSocketAddress root) {
        byte[] secret = new byte[Preamble.SECRET_BYTES];
        RANDOM.nextBytes(secret);
        return new TcpUniqueId(root, secret);
    }

    /**
     * The id both sides of an explicit-address job ({@code "ip:port"}) agree on without talking:
     * the secret is a hash of the canonical address and {@code MSCCLPP_BOOTSTRAP_SECRET}, so two jobs
     * on different roots, or with different shared secrets, never accept each other's connections.
     * Without a shared secret (null) anyone who knows the address can compute it: see {@link #explicit}.
     */
    static TcpUniqueId derived(InetSocketAddress root, @Nullable String sharedSecret) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update("jmscclpp-bootstrap-v1|".getBytes(StandardCharsets.UTF_8));
            sha.update(root.getAddress().getAddress());
            sha.update((byte) (root.getPort() >>> 8));
            sha.update((byte) root.getPort());
            sha.update((byte) '|');
            if (sharedSecret != null) {
                sha.update(sharedSecret.getBytes(StandardCharsets.UTF_8));
            }
            return new TcpUniqueId(root, sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    /**
     * The id of an explicit-address job at {@code root} ({@code address} as the user gave it): the
     * secret comes from {@link BootstrapOptions#secret()}; without one the job fails with
     * INVALID_USAGE naming {@value BootstrapOptions#SECRET_ENV}, unless {@link BootstrapOptions#insecure()}
     * lets it derive the secret from the address alone (with a warning).
     */
    static TcpUniqueId explicit(InetSocketAddress root, String address, BootstrapOptions options, int rank) {
        if (options.secret() != null) {
            return derived(root, options.secret());
        }
        if (!options.insecure()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the explicit-address job at " + address
                            + " has no secret: set " + BootstrapOptions.SECRET_ENV + " to the same string of at least "
                            + BootstrapOptions.MIN_SECRET_CHARS + " characters on every rank (jmscclpp run sets a "
                            + "fresh one per job), or " + BootstrapOptions.INSECURE_ENV + "=1 to derive it from the "
                            + "address alone")
                    .rank(rank).phase("initialize").build();
        }
        LOG.log(System.Logger.Level.WARNING, "rank {0}: {1}=1 and no {2}: the job secret is derived from the root "
                        + "address {3}, so anyone who knows the address can join or disrupt this job",
                rank, BootstrapOptions.INSECURE_ENV, BootstrapOptions.SECRET_ENV, address);
        return derived(root, null);
    }

    UniqueId toUniqueId() {
        ByteBuffer b = ByteBuffer.allocate(UniqueId.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        InetAddress ip = root.getAddress();
        b.putInt(MAGIC);
        b.putShort(Preamble.VERSION);
        b.put((byte) (ip instanceof Inet6Address ? 6 : 4));
        b.put((byte) 0);
        byte[] addr = Arrays.copyOf(ip.getAddress(), 16);
        b.put(addr);
        b.putShort((short) root.getPort());
        b.putShort((short) 0);
        b.putInt(ip instanceof Inet6Address v6 ? v6.getScopeId() : 0);
        b.put(secret);
        return UniqueId.fromBytes(b.array());
    }

    static TcpUniqueId from(UniqueId id) {
        ByteBuffer b = ByteBuffer.wrap(id.toBytes()).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        short version = b.getShort();
        byte family = b.get();
        b.get();
        byte[] addr = new byte[16];
        b.get(addr);
        int port = Short.toUnsignedInt(b.getShort());
        b.getShort();
        int scope = b.getInt();
        byte[] secret = new byte[Preamble.SECRET_BYTES];
        b.get(secret);
        if (magic != MAGIC) {
            throw invalid("this unique id was not made by TcpBootstrap (bad magic)");
        }
        if (version != Preamble.VERSION) {
            throw invalid("unique id of protocol version " + version + ", this side speaks " + Preamble.VERSION);
        }
        if (port == 0) {
            throw invalid("unique id holds port 0");
        }
        try {
            InetAddress ip = switch (family) {
                case 4 -> InetAddress.getByAddress(Arrays.copyOf(addr, 4));
                case 6 -> Inet6Address.getByAddress(null, addr, scope);
                default -> throw invalid("unique id holds address family " + family);
            };
            if (!(ip instanceof Inet4Address) && family == 4) {
                throw invalid("unique id holds a malformed IPv4 address");
            }
            return new TcpUniqueId(new InetSocketAddress(ip, port), secret);
        } catch (UnknownHostException e) {
            throw invalid("unique id holds a malformed address");
        }
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("unique id").build();
    }
}
