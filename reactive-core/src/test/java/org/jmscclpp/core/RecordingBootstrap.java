package org.jmscclpp.core;

import java.time.Duration;
import java.util.List;
import org.jmscclpp.testkit.ForwardingBootstrap;
import reactor.core.publisher.Mono;

/** Logs "send peer/tag" and "recv peer/tag" (communicator tags) as the communicator subscribes them. */
final class RecordingBootstrap extends ForwardingBootstrap {
    private final List<String> log;

    RecordingBootstrap(Bootstrap delegate, List<String> log) {
        super(delegate);
        this.log = log;
    }

    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        return super.send(peer, tag, data, timeout)
                .doOnSubscribe(s -> log.add("send " + peer + "/" + (tag & Communicator.MAX_TAG)));
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        return super.recv(peer, tag, timeout)
                .doOnSubscribe(s -> log.add("recv " + peer + "/" + (tag & Communicator.MAX_TAG)));
    }
}
