package org.jmscclpp.bootstrap;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jspecify.annotations.Nullable;

/**
 * Chooses the one local interface and address a rank listens on, with the rules of NCCL's and
 * MSCCL++'s bootstrap.
 *
 * <p><b>Candidates.</b> Every interface that is up (and running) and has an address of the wanted
 * family ({@code MSCCLPP_SOCKET_FAMILY}: {@code AF_INET}, {@code AF_INET6}, or either) gives one
 * candidate, in enumeration order. Its address is the first IPv4 address if the family allows,
 * else the first global IPv6 address, else the first link-local one; the IPv6 loopback address is
 * never a candidate (NCCL skips it too). The system enumeration ({@link #systemInterfaces()}) is
 * sorted by interface index, the order {@code getifaddrs} reports in; tests inject their own.
 *
 * <p><b>{@link #select}.</b> With an interface list ({@code MSCCLPP_SOCKET_IFNAME}, see
 * {@link InterfaceNameFilter}) the first matching candidate wins, and no match is
 * {@link ErrorCode#INVALID_USAGE} naming the list and the candidates. Without one the order is
 * NCCL's: a name starting with {@code ib}; then, if a hint address is given (the root's address),
 * a candidate in the hint's subnet; then anything but {@code docker*}, {@code lo*} and
 * {@code virbr*}; then {@code docker*}; then {@code lo*}; then {@code virbr*}. No candidate at all
 * is {@link ErrorCode#SYSTEM_ERROR} "no usable network interface".
 *
 * <p><b>{@link #findBySubnet}.</b> For an explicit {@code ip:port} bootstrap address MSCCL++ picks
 * the first local interface with an address in the same subnet as the root's address; a loopback
 * root therefore gets {@code lo}.
 *
 * <p>Each successful selection is logged once at INFO. Methods run on the calling thread and
 * enumerate interfaces anew on every call (interfaces come and go); none of them blocks on the
 * network.
 */
public final class InterfaceSelector {

    private static final System.Logger LOG = Log.logger(InterfaceSelector.class, Subsystem.INIT);

    /** Name of the environment variable an options-based list comes from, used in messages. */
    static final String IFNAME_ENV = "MSCCLPP_SOCKET_IFNAME";

    private static final InterfaceNameFilter IB = InterfaceNameFilter.parse("ib");
    private static final InterfaceNameFilter NOT_VIRTUAL = InterfaceNameFilter.parse("^docker,lo,virbr");
    private static final InterfaceNameFilter DOCKER = InterfaceNameFilter.parse("docker");
    private static final InterfaceNameFilter LO = InterfaceNameFilter.parse("lo");
    private static final InterfaceNameFilter VIRBR = InterfaceNameFilter.parse("virbr");

    /** The address families {@code MSCCLPP_SOCKET_FAMILY} can ask for. */
    enum Family {
        ANY, INET, INET6;

        /** {@code AF_INET}, {@code AF_INET6} or null (either); anything else is INVALID_USAGE. */
        static Family parse(@Nullable String value) {
            if (value == null || value.isBlank()) {
                return ANY;
            }
            return switch (value.strip()) {
                case "AF_INET" -> INET;
                case "AF_INET6" -> INET6;
                default -> throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                        "MSCCLPP_SOCKET_FAMILY must be AF_INET or AF_INET6, got '" + value + "'")
                        .phase("interface").build();
            };
        }

        boolean allows(InetAddress a) {
            return switch (this) {
                case ANY -> true;
                case INET -> a instanceof Inet4Address;
                case INET6 -> a instanceof Inet6Address;
            };
        }

        @Override
        public String toString() {
            return switch (this) {
                case ANY -> "any";
                case INET -> "AF_INET";
                case INET6 -> "AF_INET6";
            };
        }
    }

    /** One address of an interface with its network prefix length (24 for a /24). */
    record IfAddress(InetAddress address, int prefixLength) {
        IfAddress {
            Objects.requireNonNull(address, "address");
        }

        @Override
        public String toString() {
            return BootstrapAddress.ipText(address) + "/" + prefixLength;
        }
    }

    /** What the selector needs to know of one interface; the enumeration is a list of these. */
    record NetIf(String name, boolean up, boolean loopback, List<IfAddress> addresses) {
        NetIf {
            Objects.requireNonNull(name, "name");
            addresses = List.copyOf(addresses);
        }
    }

    /** A chosen interface: its name, the address to listen on, and the rule that chose it (for logs and tests). */
    record Selected(String name, InetAddress address, int prefixLength, String rule) {
        @Override
        public String toString() {
            return name + " " + BootstrapAddress.ipText(address) + "/" + prefixLength;
        }
    }

    private final @Nullable InterfaceNameFilter filter;
    private final String filterSource;
    private final Family family;
    private final Supplier<List<NetIf>> enumeration;

    /**
     * A selector over the given enumeration.
     *
     * @param ifnameSpec   an interface list in NCCL syntax, or null for the default order
     * @param filterSource where the list came from, for messages (for example {@code MSCCLPP_SOCKET_IFNAME})
     * @param family       {@code AF_INET}, {@code AF_INET6} or null
     * @param enumeration  called on every selection; {@link #systemInterfaces()} outside tests
     */
    InterfaceSelector(@Nullable String ifnameSpec, String filterSource, @Nullable String family,
            Supplier<List<NetIf>> enumeration) {
        this(ifnameSpec == null || ifnameSpec.isBlank() ? null : InterfaceNameFilter.parse(ifnameSpec),
                filterSource, Family.parse(family), enumeration);
    }

    private InterfaceSelector(@Nullable InterfaceNameFilter filter, String filterSource, Family family,
            Supplier<List<NetIf>> enumeration) {
        this.filter = filter;
        this.filterSource = Objects.requireNonNull(filterSource, "filterSource");
        this.family = family;
        this.enumeration = Objects.requireNonNull(enumeration, "enumeration");
    }

    /** A selector for this machine's interfaces with the list and family of the options. */
    static InterfaceSelector of(BootstrapOptions options) {
        return new InterfaceSelector(options.socketIfname(), IFNAME_ENV, options.socketFamily(),
                InterfaceSelector::systemInterfaces);
    }

    /**
     * The address a rank with {@code options} listens on when no root address is known to match:
     * {@link #select select(null)} over this machine's interfaces. Other sockets of this module that
     * follow the bootstrap's interface choice (the {@code ETHERNET} transport's listener) use it.
     *
     * @throws JmscclppException INVALID_USAGE when the interface list ({@code MSCCLPP_SOCKET_IFNAME})
     *                           matches nothing, SYSTEM_ERROR when there is no usable interface at all
     */
    public static InetAddress listenAddress(BootstrapOptions options) {
        return of(options).select(null).address();
    }

    /**
     * A peer's published {@code address} as this rank must dial it. A link-local IPv6 address is an
     * address only together with the interface that reaches it, and the scope the peer published is
     * an interface index of its own host: when this rank itself listens on a link-local address
     * ({@code own}), the job runs on that link, so the peer is dialled through {@code own}'s
     * interface. Any other address is returned as it is.
     */
    public static InetSocketAddress reachableFrom(InetSocketAddress address, InetAddress own) {
        InetAddress ip = address.getAddress();
        if (ip instanceof Inet6Address && ip.isLinkLocalAddress()
                && own instanceof Inet6Address o && o.isLinkLocalAddress()
                && ((Inet6Address) ip).getScopeId() != o.getScopeId()) {
            try {
                return new InetSocketAddress(Inet6Address.getByAddress(null, ip.getAddress(), o.getScopeId()),
                        address.getPort());
            } catch (UnknownHostException e) {
                throw new IllegalStateException("a 16-byte address was refused", e);
            }
        }
        return address;
    }

    /**
     * The same selector with another interface list, for example the {@code if} of an
     * {@code if:ip:port} address; {@code source} names where it came from in error messages.
     */
    InterfaceSelector withIfname(String ifnameSpec, String source) {
        return new InterfaceSelector(InterfaceNameFilter.parse(ifnameSpec), source, family, enumeration);
    }

    /**
     * Throws {@link ErrorCode#INVALID_USAGE} when an interface list is set and matches no usable
     * interface of this host. Where an explicit root address decides the interface, the list does
     * not choose it, but a list that matches nothing is a mistake (a typo, another host's names)
     * all the same, and an error everywhere, never a silent no-op.
     */
    void requireListMatches() {
        if (filter != null) {
            List<NetIf> all = enumeration.get();
            byList(all, candidatesOf(all), filter);
        }
    }

    /** The family this selector asks for. */
    Family family() {
        return family;
    }

    /** The interface list, or null for the default order. */
    @Nullable InterfaceNameFilter filter() {
        return filter;
    }

    /**
     * The usable interfaces, one address each, in enumeration order; {@link Selected#rule()} is
     * {@code "candidate"}. Throws {@link ErrorCode#SYSTEM_ERROR} if the enumeration fails.
     */
    List<Selected> candidates() {
        return candidatesOf(enumeration.get());
    }

    private List<Selected> candidatesOf(List<NetIf> all) {
        List<Selected> out = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (NetIf nif : all) {
            if (!nif.up() || !seen.add(nif.name())) {
                continue;
            }
            IfAddress a = preferredAddress(nif);
            if (a != null) {
                out.add(new Selected(nif.name(), a.address(), a.prefixLength(), "candidate"));
            }
        }
        return out;
    }

    /**
     * The interface this rank listens on, chosen as the class comment describes.
     *
     * @param hint the root's address where known (it adds the subnet rule of the default order), or null
     * @return the chosen interface; logged at INFO
     * @throws JmscclppException INVALID_USAGE when an interface list matches nothing, SYSTEM_ERROR
     *                           when there is no usable interface at all
     */
    Selected select(@Nullable InetAddress hint) {
        List<NetIf> all = enumeration.get();
        List<Selected> candidates = candidatesOf(all);
        Selected chosen = filter != null ? byList(all, candidates, filter) : byDefaultOrder(all, candidates, hint);
        log(chosen);
        return chosen;
    }

    /**
     * The first up interface with an address in the same subnet as {@code remote} (address and
     * prefix length; for link-local IPv6 also the scope), with that address. The remote's family
     * decides which addresses count, so {@code MSCCLPP_SOCKET_FAMILY} and the interface list do
     * not apply here. A loopback {@code remote} that matches no subnet still gets the first up
     * loopback interface with an address of its family. Logged at INFO when found.
     */
    Optional<Selected> findBySubnet(InetAddress remote) {
        Optional<Selected> found = subnetMatch(enumeration.get(), remote);
        found.ifPresent(this::log);
        return found;
    }

    /**
     * {@link #findBySubnet} or, when nothing matches, {@link ErrorCode#SYSTEM_ERROR} naming the
     * remote address and the candidates.
     */
    Selected selectBySubnet(InetAddress remote) {
        List<NetIf> all = enumeration.get();
        Optional<Selected> found = subnetMatch(all, remote);
        if (found.isEmpty()) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                    "no local interface is in the subnet of " + BootstrapAddress.ipText(remote)
                            + "; interfaces: " + describe(all)).phase("interface").build();
        }
        log(found.get());
        return found.get();
    }

    /**
     * Whether {@code remote} lies in the network {@code local/prefixLength}. Both must be of one
     * family. Link-local IPv6 prefixes repeat on every link, so there the scope ids must also be
     * equal (a remote without a scope matches no link-local address); other addresses ignore the
     * scope.
     */
    static boolean sameSubnet(InetAddress local, int prefixLength, InetAddress remote) {
        byte[] l = local.getAddress();
        byte[] r = remote.getAddress();
        if (l.length != r.length) {
            return false;
        }
        int bits = Math.clamp(prefixLength, 0, l.length * 8);
        int fullBytes = bits / 8;
        for (int i = 0; i < fullBytes; i++) {
            if (l[i] != r[i]) {
                return false;
            }
        }
        int rest = bits % 8;
        if (rest != 0) {
            int mask = (0xFF << (8 - rest)) & 0xFF;
            if ((l[fullBytes] & mask) != (r[fullBytes] & mask)) {
                return false;
            }
        }
        if (local instanceof Inet6Address l6 && remote instanceof Inet6Address r6
                && (l6.isLinkLocalAddress() || r6.isLinkLocalAddress())) {
            return l6.getScopeId() == r6.getScopeId();
        }
        return true;
    }

    /**
     * This machine's interfaces, sub-interfaces (aliases) right after their parent, sorted by
     * interface index: Java lists them in no documented order, the kernel's {@code getifaddrs}
     * (which NCCL walks) by index. An interface that disappears while it is read counts as down.
     *
     * @throws JmscclppException SYSTEM_ERROR when the operating system refuses the enumeration
     */
    static List<NetIf> systemInterfaces() {
        long now = System.nanoTime();
        Snapshot last = snapshot;
        if (last != null && now - last.takenNanos() < SNAPSHOT_NANOS) {
            return last.interfaces();
        }
        List<NetIf> fresh = readSystemInterfaces();
        snapshot = new Snapshot(now, fresh);
        return fresh;
    }

    /**
     * Listing interfaces costs about a millisecond; many ranks starting in one JVM share one listing
     * for up to a second (long enough for a burst of ranks, short enough to see an interface come up).
     */
    private static final long SNAPSHOT_NANOS = 1_000_000_000L;

    private record Snapshot(long takenNanos, List<NetIf> interfaces) {
    }

    private static volatile @Nullable Snapshot snapshot;

    private static List<NetIf> readSystemInterfaces() {
        List<NetworkInterface> top;
        try {
            top = new ArrayList<>(NetworkInterface.networkInterfaces().toList());
        } catch (SocketException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                    "cannot list network interfaces: " + e.getMessage()).phase("interface").cause(e).build();
        }
        top.sort(Comparator.comparingInt(NetworkInterface::getIndex));
        List<NetIf> out = new ArrayList<>();
        for (NetworkInterface nif : top) {
            out.add(toNetIf(nif));
            nif.subInterfaces().map(InterfaceSelector::toNetIf).forEach(out::add);
        }
        return List.copyOf(out);
    }

    private static NetIf toNetIf(NetworkInterface nif) {
        boolean up;
        boolean loopback;
        try {
            up = nif.isUp();
            loopback = nif.isLoopback();
        } catch (SocketException e) {
            up = false;
            loopback = false;
        }
        List<IfAddress> addresses = new ArrayList<>();
        for (InterfaceAddress ia : nif.getInterfaceAddresses()) {
            InetAddress a = ia.getAddress();
            if (a != null) {
                addresses.add(new IfAddress(withoutGlobalScope(a), ia.getNetworkPrefixLength()));
            }
        }
        return new NetIf(nif.getName(), up, loopback, addresses);
    }

    /**
     * Java tags every IPv6 address of an interface with that interface's scope, global ones too;
     * only link-local addresses need it (the kernel ignores it elsewhere), so it is dropped from
     * the others to keep them comparable with addresses parsed from text.
     */
    private static InetAddress withoutGlobalScope(InetAddress a) {
        if (a instanceof Inet6Address && !a.isLinkLocalAddress()) {
            try {
                return InetAddress.getByAddress(a.getAddress());
            } catch (UnknownHostException e) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "16 bytes were not taken as an IPv6 address")
                        .phase("interface").cause(e).build();
            }
        }
        return a;
    }

    private @Nullable IfAddress preferredAddress(NetIf nif) {
        IfAddress global6 = null;
        IfAddress linkLocal6 = null;
        for (IfAddress a : nif.addresses()) {
            InetAddress ip = a.address();
            if (!family.allows(ip) || (ip instanceof Inet6Address && ip.isLoopbackAddress())) {
                continue;
            }
            if (ip instanceof Inet4Address) {
                return a;
            }
            if (ip.isLinkLocalAddress()) {
                if (linkLocal6 == null) {
                    linkLocal6 = a;
                }
            } else if (global6 == null) {
                global6 = a;
            }
        }
        return global6 != null ? global6 : linkLocal6;
    }

    private Selected byList(List<NetIf> all, List<Selected> candidates, InterfaceNameFilter list) {
        for (Selected c : candidates) {
            if (list.matches(c.name())) {
                return withRule(c, filterSource + "=" + list.spec());
            }
        }
        // an interface the list names whose only address of the family is the IPv6 loopback: say why it is not one
        String loopbackOnly = all.stream().filter(n -> n.up() && list.matches(n.name())
                        && n.addresses().stream().anyMatch(a -> a.address() instanceof Inet6Address
                        && a.address().isLoopbackAddress() && family.allows(a.address())))
                .map(NetIf::name).findFirst().map(n -> "; " + n + "'s IPv6 address is the loopback ::1, which is never"
                        + " a candidate (as in NCCL): for a job on this host's loopback give the root address"
                        + " MSCCLPP_COMM_ID=[::1]:PORT").orElse("");
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                filterSource + " '" + list.spec() + "' matches no usable interface (family " + family
                        + "); available: " + describeCandidates(candidates) + loopbackOnly).phase("interface").build();
    }

    private Selected byDefaultOrder(List<NetIf> all, List<Selected> candidates, @Nullable InetAddress hint) {
        Optional<Selected> c = first(candidates, s -> IB.matches(s.name()), "prefix ib");
        if (c.isEmpty() && hint != null && family.allows(hint)) {
            c = first(candidates, s -> sameSubnet(s.address(), s.prefixLength(), hint),
                    "subnet of " + BootstrapAddress.ipText(hint));
        }
        if (c.isEmpty()) {
            c = first(candidates, s -> NOT_VIRTUAL.matches(s.name()), "not docker/lo/virbr");
        }
        if (c.isEmpty()) {
            c = first(candidates, s -> DOCKER.matches(s.name()), "prefix docker");
        }
        if (c.isEmpty()) {
            c = first(candidates, s -> LO.matches(s.name()), "prefix lo");
        }
        if (c.isEmpty()) {
            c = first(candidates, s -> VIRBR.matches(s.name()), "prefix virbr");
        }
        return c.orElseThrow(() -> JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                "no usable network interface (family " + family + ", up, not IPv6 loopback); interfaces: "
                        + describe(all)).phase("interface").build());
    }

    private static Optional<Selected> first(List<Selected> candidates, Predicate<Selected> rule, String name) {
        return candidates.stream().filter(rule).findFirst().map(s -> withRule(s, name));
    }

    private static Optional<Selected> subnetMatch(List<NetIf> all, InetAddress remote) {
        String rule = "subnet of " + BootstrapAddress.ipText(remote);
        for (NetIf nif : all) {
            if (!nif.up()) {
                continue;
            }
            for (IfAddress a : nif.addresses()) {
                if (sameSubnet(a.address(), a.prefixLength(), remote)) {
                    return Optional.of(new Selected(nif.name(), a.address(), a.prefixLength(), rule));
                }
            }
        }
        if (remote.isLoopbackAddress()) {
            for (NetIf nif : all) {
                if (!nif.up() || !nif.loopback()) {
                    continue;
                }
                for (IfAddress a : nif.addresses()) {
                    if (sameFamily(a.address(), remote)) {
                        return Optional.of(new Selected(nif.name(), a.address(), a.prefixLength(),
                                "loopback for " + BootstrapAddress.ipText(remote)));
                    }
                }
            }
        }
        return Optional.empty();
    }

    private static boolean sameFamily(InetAddress a, InetAddress b) {
        return (a instanceof Inet4Address) == (b instanceof Inet4Address);
    }

    private static Selected withRule(Selected s, String rule) {
        return new Selected(s.name(), s.address(), s.prefixLength(), rule);
    }

    private static String describeCandidates(List<Selected> candidates) {
        return candidates.isEmpty() ? "none"
                : candidates.stream().map(Selected::toString).collect(Collectors.joining(", "));
    }

    private static String describe(List<NetIf> all) {
        if (all.isEmpty()) {
            return "none";
        }
        return all.stream()
                .map(n -> n.name() + (n.up() ? "" : " (down)") + " " + n.addresses())
                .collect(Collectors.joining(", "));
    }

    /** Choices already announced at INFO: a thousand ranks in one JVM log their interface once. */
    private static final java.util.Set<String> ANNOUNCED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private void log(Selected s) {
        String line = "Bootstrap: using interface " + s + " (" + s.rule() + ", family " + family + ")";
        LOG.log(ANNOUNCED.add(line) ? System.Logger.Level.INFO : System.Logger.Level.DEBUG, line);
    }
}
