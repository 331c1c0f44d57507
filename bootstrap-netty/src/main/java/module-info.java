/**
 * The TCP bootstrap ({@link org.jmscclpp.bootstrap.TcpBootstrap}) over Netty, and the {@code ETHERNET} data
 * transport, which the core finds through its transport SPI. Only {@code org.jmscclpp.bootstrap} is an application
 * API; the wire codecs and the transport stay inside the module.
 */
module org.jmscclpp.bootstrap {
    requires transitive org.jmscclpp.core;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.transport.classes.epoll;
    requires static org.jspecify;

    exports org.jmscclpp.bootstrap;

    provides org.jmscclpp.core.spi.TransportProvider with org.jmscclpp.ethernet.EthernetTransportProvider;
}
