package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opening an ETHERNET session on an event loop of its own group (a user's {@code registerMemory} inside
 * {@code TcpBootstrap.initialize(...).flatMap}, which runs on the bootstrap's I/O thread) is INVALID_USAGE that says
 * what to do, not Netty's BlockingOperationException; the loop stays usable.
 */
class EthernetSessionOnEventLoopTest {

    @TempDir
    Path dir;

    @Test
    void openingTheListenerOnTheSharedIoThreadIsInvalidUsage() throws Exception {
        try (HostBackend backend = HostBackend.open(dir); EventLoops.Lease loops = EventLoops.lease(null)) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> loops.group().submit(
                    () -> new EthernetSession(backend, InetAddress.getLoopbackAddress(), null))
                    .get(10, TimeUnit.SECONDS));
            JmscclppException j = assertInstanceOf(JmscclppException.class, e.getCause());
            assertEquals(ErrorCode.INVALID_USAGE, j.code());
            assertTrue(j.getMessage().contains("publishOn"), j.getMessage());
            // off the loop the same session opens, and the loop is still serving
            try (EthernetSession session = new EthernetSession(backend, InetAddress.getLoopbackAddress(), null)) {
                assertTrue(session.listening().getPort() > 0);
            }
            assertEquals("ok", loops.group().submit(() -> "ok").get(10, TimeUnit.SECONDS));
        }
    }
}
