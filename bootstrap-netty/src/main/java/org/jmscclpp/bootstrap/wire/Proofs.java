package org.jmscclpp.bootstrap.wire;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

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
    private static final String ALGORITHM = "HmacSHA256";
    private static final SecureRandom RANDOM = new SecureRandom();

    private Proofs() {
    }

    /** {@value Preamble#NONCE_BYTES} fresh random bytes. */
    public static byte[] nonce() {
        byte[] n = new byte[Preamble.NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /** {@code HMAC-SHA256(secret, label || parts[0] || parts[1] ...)}. */
    public static byte[] compute(byte[] secret, String label, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(new SecretKeySpec(secret, ALGORITHM));
            mac.update(label.getBytes(StandardCharsets.US_ASCII));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /** Whether {@code got} equals {@code expected}, in time that does not depend on where they differ. */
    public static boolean matches(byte[] expected, byte[] got) {
        return MessageDigest.isEqual(expected, got);
    }
}
