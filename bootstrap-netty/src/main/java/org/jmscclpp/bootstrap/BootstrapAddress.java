package org.jmscclpp.bootstrap;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * An explicit bootstrap address, as given to {@code TcpBootstrap.initialize(String)}: where rank 0
 * hosts the root and where every other rank finds it.
 *
 * <table>
 *   <caption>Accepted forms</caption>
 *   <tr><th>form</th><th>example</th><th>meaning</th></tr>
 *   <tr><td>{@code ip:port}</td><td>{@code 10.0.0.1:5000}</td><td>IPv4 literal</td></tr>
 *   <tr><td>{@code host:port}</td><td>{@code node7:5000}</td><td>host name, resolved once</td></tr>
 *   <tr><td>{@code if:ip:port}, {@code if:host:port}</td><td>{@code eth0:10.0.0.1:5000}</td>
 *       <td>as above, and listen on an interface matching {@code if} (an
 *       {@code MSCCLPP_SOCKET_IFNAME}-style list, normally a name prefix)</td></tr>
 *   <tr><td>{@code [v6]:port}</td><td>{@code [fd00::2]:5000}</td><td>IPv6 literal</td></tr>
 *   <tr><td>{@code [v6%if]:port}</td><td>{@code [fe80::1%eth0]:5000}</td>
 *       <td>IPv6 literal with a scope: an interface name of this host or a numeric scope id</td></tr>
 *   <tr><td>{@code if:[v6]:port}</td><td>{@code ib0:[fd00::2]:5000}</td><td>IPv6 literal plus interface list</td></tr>
 * </table>
 *
 * <p>An IPv4 literal must be a dotted quad in decimal without leading zeros ({@code 010.0.0.1}
 * means 8.0.0.1 to C's {@code inet_aton} and 10.0.0.1 to Java, so it is refused); an IPv6 literal
 * must be in brackets. The port is 1 to 65535 in decimal without leading zeros. Literals never touch DNS; a host name is resolved
 * once, while parsing, and the first address of the wanted family is used. Every failure is
 * {@link ErrorCode#INVALID_USAGE} with phase {@code "address"} and the offending string in the
 * detail.
 */
final class BootstrapAddress {

    /** Resolves a host name to its addresses; {@link InetAddress#getAllByName} outside tests. */
    @FunctionalInterface
    interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private static final String FORMS =
            "expected ip:port, if:ip:port, host:port, [v6]:port, [v6%if]:port or if:[v6]:port";
    private static final Pattern PORT = Pattern.compile("[1-9][0-9]{0,4}");
    private static final Pattern IPV4 = Pattern.compile("([0-9]{1,3})\\.([0-9]{1,3})\\.([0-9]{1,3})\\.([0-9]{1,3})");
    private static final Pattern DIGITS_AND_DOTS = Pattern.compile("[0-9.]+");
    private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})");
    private static final Pattern IPV6_TEXT = Pattern.compile("[0-9A-Fa-f:.]+");
    private static final Pattern SCOPE_ID = Pattern.compile("[0-9]{1,9}");
    private static final Pattern INTERFACE_LIST = Pattern.compile("[^\\s:\\[\\]%]+");

    private final @Nullable String interfacePrefix;
    private final String host;
    private final int port;
    private final InetSocketAddress socketAddress;

    private BootstrapAddress(@Nullable String interfacePrefix, String host, int port, InetAddress address) {
        this.interfacePrefix = interfacePrefix;
        this.host = host;
        this.port = port;
        this.socketAddress = new InetSocketAddress(address, port);
    }

    /** Parses {@code text}, resolving a host name through DNS to its first address of either family. */
    static BootstrapAddress parse(String text) {
        return parse(text, null, InetAddress::getAllByName);
    }

    /**
     * Parses {@code text}; a host name is resolved to its first address of {@code family}
     * ({@code AF_INET}, {@code AF_INET6} or null for either). Literals are taken as written,
     * whatever the family. Blocks on DNS for host names only.
     *
     * @throws JmscclppException INVALID_USAGE, phase {@code "address"}, naming {@code text}
     */
    static BootstrapAddress parse(String text, @Nullable String family, Resolver resolver) {
        Objects.requireNonNull(text, "text");
        String s = text.strip();
        if (s.isEmpty()) {
            throw invalid(text, "is empty");
        }
        int open = s.indexOf('[');
        return open >= 0 ? parseBracketed(text, s, open) : parsePlain(text, s, family, resolver);
    }

    private static BootstrapAddress parseBracketed(String text, String s, int open) {
        String prefix = null;
        if (open > 0) {
            if (s.charAt(open - 1) != ':') {
                throw invalid(text, "has text before '[' that is not an 'if:' prefix");
            }
            prefix = interfaceList(text, s.substring(0, open - 1));
        }
        int close = s.indexOf(']', open);
        if (close < 0) {
            throw invalid(text, "has '[' without ']'");
        }
        if (s.indexOf('[', open + 1) >= 0 || s.indexOf(']', close + 1) >= 0) {
            throw invalid(text, "has more than one bracketed address");
        }
        String inside = s.substring(open + 1, close);
        String after = s.substring(close + 1);
        if (after.isEmpty() || after.equals(":")) {
            throw invalid(text, "has no port");
        }
        if (after.charAt(0) != ':') {
            throw invalid(text, "has '" + after + "' after ']' where ':port' belongs");
        }
        int port = port(text, after.substring(1));
        return new BootstrapAddress(prefix, inside, port, ipv6Literal(text, inside));
    }

    private static BootstrapAddress parsePlain(String text, String s, @Nullable String family, Resolver resolver) {
        if (s.indexOf(']') >= 0) {
            throw invalid(text, "has ']' without '['");
        }
        String[] parts = s.split(":", -1);
        String prefix;
        String host;
        switch (parts.length) {
            case 1 -> throw invalid(text, "has no port");
            case 2 -> {
                prefix = null;
                host = parts[0];
            }
            case 3 -> {
                prefix = interfaceList(text, parts[0]);
                host = parts[1];
            }
            default -> throw invalid(text, "has too many ':'; an IPv6 address must be written in brackets, as in [fd00::1]:5000");
        }
        String portText = parts[parts.length - 1];
        if (portText.isEmpty()) {
            throw invalid(text, "has no port");
        }
        if (host.isEmpty()) {
            throw invalid(text, "has no host");
        }
        int port = port(text, portText);
        InetAddress address = DIGITS_AND_DOTS.matcher(host).matches()
                ? ipv4Literal(text, host)
                : resolve(text, host, family, resolver);
        return new BootstrapAddress(prefix, host, port, address);
    }

    private static String interfaceList(String text, String prefix) {
        if (prefix.isEmpty()) {
            throw invalid(text, "has an empty interface before ':'");
        }
        if (!INTERFACE_LIST.matcher(prefix).matches()) {
            throw invalid(text, "has an interface '" + prefix + "' with a blank, '[', ']' or '%' in it");
        }
        try {
            InterfaceNameFilter.parse(prefix);
        } catch (JmscclppException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "bootstrap address '" + text + "': " + e.detail()).phase("address").cause(e).build();
        }
        return prefix;
    }

    private static int port(String text, String portText) {
        if (!PORT.matcher(portText).matches()) {
            throw invalid(text, "has port '" + portText + "', which is not a number from 1 to 65535");
        }
        int port = Integer.parseInt(portText);
        if (port < 1 || port > 65535) {
            throw invalid(text, "has port " + port + ", outside 1..65535");
        }
        return port;
    }

    private static InetAddress ipv4Literal(String text, String host) {
        Matcher m = IPV4.matcher(host);
        if (!m.matches()) {
            throw invalid(text, "has '" + host + "', which is not an IPv4 address a.b.c.d");
        }
        byte[] bytes = new byte[4];
        for (int i = 0; i < 4; i++) {
            String octet = m.group(i + 1);
            int v = Integer.parseInt(octet);
            if (v > 255 || (octet.length() > 1 && octet.charAt(0) == '0')) {
                throw invalid(text, "has '" + host + "', which is not an IPv4 address (octets are 0..255 in "
                        + "decimal without leading zeros)");
            }
            bytes[i] = (byte) v;
        }
        try {
            return InetAddress.getByAddress(bytes);
        } catch (UnknownHostException e) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "four bytes were not taken as an IPv4 address")
                    .phase("address").cause(e).build();
        }
    }

    private static InetAddress ipv6Literal(String text, String inside) {
        int percent = inside.indexOf('%');
        String literal = percent >= 0 ? inside.substring(0, percent) : inside;
        String scope = percent >= 0 ? inside.substring(percent + 1) : null;
        if (literal.isEmpty() || !literal.contains(":") || !IPV6_TEXT.matcher(literal).matches()) {
            throw invalid(text, "has '[" + inside + "]', which is not an IPv6 address");
        }
        InetAddress parsed;
        try {
            parsed = InetAddress.ofLiteral(literal);
        } catch (IllegalArgumentException e) {
            throw invalid(text, "has '[" + inside + "]', which is not an IPv6 address");
        }
        if (scope == null) {
            if (parsed instanceof Inet6Address && parsed.isLinkLocalAddress()) {
                // the kernel refuses to bind or connect an unscoped link-local address (EINVAL): say so here, on
                // every rank, rather than as rank 0's SYSTEM_ERROR and the others' TIMEOUT at the deadline
                throw invalid(text, "is a link-local IPv6 address without a scope: name the interface that reaches "
                        + "it, as in [" + literal + "%eth0]:port");
            }
            return parsed;
        }
        if (!(parsed instanceof Inet6Address)) {
            throw invalid(text, "has a scope on '" + literal + "', which is an IPv4 address");
        }
        if (scope.isEmpty()) {
            throw invalid(text, "has an empty scope after '%'");
        }
        return scoped(text, parsed.getAddress(), scope);
    }

    private static InetAddress scoped(String text, byte[] bytes, String scope) {
        try {
            if (SCOPE_ID.matcher(scope).matches()) {
                return Inet6Address.getByAddress(null, bytes, Integer.parseInt(scope));
            }
            NetworkInterface nif = NetworkInterface.getByName(scope);
            if (nif == null) {
                throw invalid(text, "has scope '" + scope + "', which is no interface of this host");
            }
            try {
                return Inet6Address.getByAddress(null, bytes, nif);
            } catch (UnknownHostException e) {
                // Java wants the interface to own an address of the same scope to name it; the index still routes.
                return Inet6Address.getByAddress(null, bytes, nif.getIndex());
            }
        } catch (SocketException | UnknownHostException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "bootstrap address '" + text + "' has scope '" + scope + "' that cannot be used: " + e.getMessage())
                    .phase("address").cause(e).build();
        }
    }

    private static InetAddress resolve(String text, String host, @Nullable String family, Resolver resolver) {
        if (!HOST_NAME.matcher(host).matches()) {
            throw invalid(text, "has '" + host + "', which is neither an IPv4 address nor a host name");
        }
        InterfaceSelector.Family wanted = InterfaceSelector.Family.parse(family);
        InetAddress[] all;
        try {
            all = resolver.resolve(host);
        } catch (UnknownHostException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "bootstrap address '" + text + "': host '" + host + "' cannot be resolved: " + e.getMessage())
                    .phase("address").cause(e).build();
        }
        for (InetAddress a : all) {
            if (wanted.allows(a)) {
                return a;
            }
        }
        throw invalid(text, "has host '" + host + "' without an address of family " + wanted);
    }

    private static JmscclppException invalid(String text, String what) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "bootstrap address '" + text + "' " + what + "; " + FORMS)
                .phase("address").build();
    }

    /** The interface list of an {@code if:...} form, or null. */
    @Nullable String interfacePrefix() {
        return interfacePrefix;
    }

    /** The host as written, without brackets: an IPv4 literal, a host name, or an IPv6 literal with its scope. */
    String host() {
        return host;
    }

    /** The port, 1 to 65535. */
    int port() {
        return port;
    }

    /** The resolved address. */
    InetAddress address() {
        return socketAddress.getAddress();
    }

    /** The resolved address and the port. */
    InetSocketAddress socketAddress() {
        return socketAddress;
    }

    /** Canonical {@code ip:port} or {@code [v6]:port} of the resolved address (see {@link #ipText}), without the interface list. */
    @Override
    public String toString() {
        String ip = ipText(address());
        return (address() instanceof Inet6Address ? "[" + ip + "]" : ip) + ":" + port;
    }

    /**
     * Text of an address that does no lookup: dotted quad for IPv4; for IPv6 the RFC 5952 form
     * (lower case, no leading zeros, the longest run of two or more zero groups as {@code ::})
     * followed by {@code %name} or {@code %id} when the address has a scope.
     */
    static String ipText(InetAddress address) {
        if (!(address instanceof Inet6Address a6)) {
            return address.getHostAddress();
        }
        byte[] b = a6.getAddress();
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = ((b[2 * i] & 0xFF) << 8) | (b[2 * i + 1] & 0xFF);
        }
        int bestStart = -1;
        int bestLen = 1;
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder(48);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        NetworkInterface scopeIf = a6.getScopedInterface();
        if (scopeIf != null) {
            sb.append('%').append(scopeIf.getName());
        } else if (a6.getScopeId() != 0) {
            sb.append('%').append(a6.getScopeId());
        }
        return sb.toString();
    }
}
