package org.jmscclpp.bootstrap.wire;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;

/**
 * The challenge-response arithmetic shared by the bootstrap's {@link Preamble} handshake and the
 * {@code ETHERNET} transport's: fresh nonces, and proofs of knowing a secret that are
 * {@code HMAC-SHA256(secret, label || message...)} over what both sides sent. The label tells
 * apart the protocols and the two directions of one handshake, so no proof is valid anywhere but
 * where it was made. Checks compare in constant time.
 */
public final class Proofs {

    /** Size of a proof: one HMAC-SHA256. */
    public static final int BYTES = 32;
    /** SHA-256's block size, the size of HMAC's padded key. */
    private static final int BLOCK = 64;
    private static final SecureRandom RANDOM = new SecureRandom();

    private Proofs() {
    }

    /** {@value Preamble#NONCE_BYTES} fresh random bytes. */
    public static byte[] nonce() {
        byte[] n = new byte[Preamble.NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /**
     * {@code HMAC-SHA256(secret, label || parts[0] || parts[1] ...)}, as RFC 2104 defines it, over
     * {@link MessageDigest}'s SHA-256: the JCE's {@code Mac} would cost a fresh JVM tens of
     * milliseconds more to set up on its first handshake (measured on the 2-core host).
     */
    public static byte[] compute(byte[] secret, String label, byte[]... parts) {
        MessageDigest sha = sha256();
        byte[] key = secret.length > BLOCK ? sha.digest(secret) : secret;
        byte[] inner = new byte[BLOCK];
        byte[] outer = new byte[BLOCK];
        for (int i = 0; i < BLOCK; i++) {
            byte k = i < key.length ? key[i] : 0;
            inner[i] = (byte) (k ^ 0x36);
            outer[i] = (byte) (k ^ 0x5c);
        }
        sha.update(inner);
        sha.update(label.getBytes(StandardCharsets.US_ASCII));
        for (byte[] p : parts) {
            sha.update(p);
        }
        byte[] innerHash = sha.digest();
        sha.update(outer);
        sha.update(innerHash);
        return sha.digest();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    /** Whether {@code got} equals {@code expected}, in time that does not depend on where they differ. */
    public static boolean matches(byte[] expected, byte[] got) {
        return MessageDigest.isEqual(expected, got);
    }
}
