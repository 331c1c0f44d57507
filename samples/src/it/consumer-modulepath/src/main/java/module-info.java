/**
 * A user's module. The two jmscclpp modules must give it Reactor too (requires transitive reactor.core:
 * their API returns Mono and Flux).
 */
module org.jmscclpp.it.modular {
    requires org.jmscclpp.core;
    requires org.jmscclpp.bootstrap;
    requires org.jmscclpp.nativebridge;

    exports org.jmscclpp.it.modular;
}
