package org.jmscclpp.bootstrap.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/** {@link Proofs}: HMAC-SHA256 as RFC 2104 and RFC 4231 define it, and fresh nonces. */
class ProofsTest {

    @Test
    void computesTheHmacOfRfc4231TestCaseOne() {
        byte[] key = new byte[20];
        Arrays.fill(key, (byte) 0x0b);
        assertEquals("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
                HexFormat.of().formatHex(Proofs.compute(key, "Hi There")));
    }

    @Test
    void agreesWithTheJcesHmacForShortAndLongKeysAndSplitMessages() throws Exception {
        Random random = new Random(19);
        for (int keyBytes : new int[] {1, 32, 63, 64, 65, 131}) {
            byte[] key = new byte[keyBytes];
            random.nextBytes(key);
            byte[] a = new byte[random.nextInt(200)];
            byte[] b = new byte[64];
            random.nextBytes(a);
            random.nextBytes(b);
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update("label".getBytes(StandardCharsets.US_ASCII));
            mac.update(a);
            mac.update(b);
            assertArrayEquals(mac.doFinal(), Proofs.compute(key, "label", a, b), "key of " + keyBytes + " bytes");
        }
    }

    @Test
    void theLabelSeparatesProofsOfTheSameMessage() {
        byte[] key = new byte[32];
        byte[] m = new byte[64];
        assertFalse(Arrays.equals(Proofs.compute(key, Preamble.ACCEPT_LABEL, m),
                Proofs.compute(key, Preamble.DIAL_LABEL, m)));
    }

    @Test
    void noncesAreFreshAndMatchesComparesWholeArrays() {
        byte[] a = Proofs.nonce();
        byte[] b = Proofs.nonce();
        assertEquals(Preamble.NONCE_BYTES, a.length);
        assertFalse(Arrays.equals(a, b));
        assertTrue(Proofs.matches(a, a.clone()));
        assertFalse(Proofs.matches(a, Arrays.copyOf(a, a.length - 1)));
    }
}
