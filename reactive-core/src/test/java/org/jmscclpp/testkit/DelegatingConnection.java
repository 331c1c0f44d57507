package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import reactor.core.publisher.Mono;

/** A connection that does everything through {@link #real}; tests override what they change. */
public class DelegatingConnection implements Connection {
    protected final Connection real;

    public DelegatingConnection(Connection real) {
        this.real = real;
    }

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        real.write(dst, dstOffset, src, srcOffset, size);
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        real.updateAndSync(dst, dstOffset, localToken, newValue);
    }

    @Override
    public Mono<Void> flush(Duration timeout) {
        return real.flush(timeout);
    }

    @Override
    public Transport transport() {
        return real.transport();
    }

    @Override
    public Transport remoteTransport() {
        return real.remoteTransport();
    }

    @Override
    public Device localDevice() {
        return real.localDevice();
    }

    @Override
    public ConnectionContext context() {
        return real.context();
    }

    @Override
    public int maxWriteQueueSize() {
        return real.maxWriteQueueSize();
    }

    @Override
    public void close() {
        real.close();
    }
}
