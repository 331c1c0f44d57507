package org.jmscclpp.ethernet;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.Proofs;

/**
 * Both sides of the {@code ETHERNET} handshake for tests, made with {@link EthernetWire}'s own
 * code: what an honest or forging dialler sends, what a listener that knows (or fakes) the secret
 * answers.
 */
final class EthernetHandshakes {

    static final int CHALLENGE_FRAME_BYTES = EthernetWire.HEADER_BYTES + EthernetWire.CHALLENGE_BYTES;

    private EthernetHandshakes() {
    }

    /** A hello of rank 1 to rank 0, tag 7, with a fresh nonce. */
    static byte[] hello() {
        return EthernetWire.hello(1, 0, 7);
    }

    /** The listener's nonce in a CHALLENGE frame; checks the frame's header. */
    static byte[] nonceOf(byte[] challengeFrame) {
        ByteBuffer h = ByteBuffer.wrap(challengeFrame).order(ByteOrder.LITTLE_ENDIAN);
        if (challengeFrame.length != CHALLENGE_FRAME_BYTES || h.get(0) != EthernetWire.CHALLENGE
                || h.getInt(4) != EthernetWire.CHALLENGE_BYTES) {
            throw new AssertionError("not a CHALLENGE frame: " + Arrays.toString(Arrays.copyOf(challengeFrame, 8)));
        }
        return Arrays.copyOfRange(challengeFrame, EthernetWire.HEADER_BYTES,
                EthernetWire.HEADER_BYTES + Preamble.NONCE_BYTES);
    }

    /** Whether the CHALLENGE frame's proof shows {@code secret} for {@code hello}. */
    static boolean challengeProves(byte[] secret, byte[] hello, byte[] challengeFrame) {
        byte[] proof = Arrays.copyOfRange(challengeFrame, EthernetWire.HEADER_BYTES + Preamble.NONCE_BYTES,
                CHALLENGE_FRAME_BYTES);
        return Proofs.matches(EthernetWire.acceptProof(secret, hello, nonceOf(challengeFrame)), proof);
    }

    /** The dialler's answer to {@code challengeFrame}: its proof of {@code secret}. */
    static byte[] proof(byte[] secret, byte[] hello, byte[] challengeFrame) {
        return EthernetWire.dialProof(secret, hello, nonceOf(challengeFrame));
    }

    /** A CHALLENGE frame a listener with {@code secret} sends in answer to {@code hello}. */
    static byte[] challenge(byte[] secret, byte[] hello) {
        byte[] nonce = Proofs.nonce();
        io.netty.buffer.ByteBuf b = EthernetWire.challenge(io.netty.buffer.UnpooledByteBufAllocator.DEFAULT, nonce,
                EthernetWire.acceptProof(secret, hello, nonce));
        try {
            byte[] out = new byte[b.readableBytes()];
            b.readBytes(out);
            return out;
        } finally {
            b.release();
        }
    }

    /**
     * Dials over {@code s} as rank 0 to rank 1, tag 0: sends a hello, reads the challenge and
     * answers with a proof made with {@code proofSecret}. Returns what this side sent.
     */
    static byte[] dial(Socket s, byte[] proofSecret) throws IOException {
        byte[] hello = EthernetWire.hello(0, 1, 0);
        s.getOutputStream().write(hello);
        byte[] challenge = new byte[CHALLENGE_FRAME_BYTES];
        new DataInputStream(s.getInputStream()).readFully(challenge);
        byte[] proof = proof(proofSecret, hello, challenge);
        s.getOutputStream().write(proof);
        byte[] sent = Arrays.copyOf(hello, hello.length + proof.length);
        System.arraycopy(proof, 0, sent, hello.length, proof.length);
        return sent;
    }
}
