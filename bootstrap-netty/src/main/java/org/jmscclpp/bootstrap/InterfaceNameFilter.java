package org.jmscclpp.bootstrap;

import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * A parsed {@code MSCCLPP_SOCKET_IFNAME} value, in the syntax NCCL's {@code NCCL_SOCKET_IFNAME}
 * and MSCCL++ share:
 *
 * <ul>
 *   <li>a comma-separated list of interface name <em>prefixes</em>: {@code eth} matches
 *       {@code eth0} and {@code eth1}; {@code eth0,ib} matches either family;</li>
 *   <li>a leading {@code ^} makes it an exclude list: {@code ^docker,lo} matches every name that
 *       starts with neither;</li>
 *   <li>a leading {@code =} (after the optional {@code ^}) makes the entries exact names:
 *       {@code =eth0} matches {@code eth0} but not {@code eth01}; {@code ^=docker0} matches all but
 *       {@code docker0};</li>
 *   <li>an entry may end in {@code :port}, which is dropped (NCCL uses it for device lists; it has
 *       no meaning for an interface). As in NCCL, this means a Linux alias label such as
 *       {@code eth0:1} cannot be named; its parent's prefix matches it.</li>
 * </ul>
 *
 * <p>Whitespace around the value and around each entry is ignored, as are empty entries. An
 * include list left with no entry could never match, so it is rejected with
 * {@link ErrorCode#INVALID_USAGE}; an exclude list with no entry excludes nothing. Names are
 * compared case-sensitively, like the kernel does.
 */
final class InterfaceNameFilter {

    private final String spec;
    private final boolean exclude;
    private final boolean exact;
    private final List<String> names;

    private InterfaceNameFilter(String spec, boolean exclude, boolean exact, List<String> names) {
        this.spec = spec;
        this.exclude = exclude;
        this.exact = exact;
        this.names = names;
    }

    /**
     * Parses a value; throws {@link ErrorCode#INVALID_USAGE} (phase {@code "interface"}) for an
     * include list without any name.
     */
    static InterfaceNameFilter parse(String spec) {
        String s = spec.strip();
        boolean exclude = false;
        boolean exact = false;
        if (s.startsWith("^")) {
            exclude = true;
            s = s.substring(1).stripLeading();
        }
        if (s.startsWith("=")) {
            exact = true;
            s = s.substring(1);
        }
        List<String> names = new ArrayList<>();
        for (String entry : s.split(",", -1)) {
            int colon = entry.indexOf(':');
            String name = (colon >= 0 ? entry.substring(0, colon) : entry).strip();
            if (!name.isEmpty() && !names.contains(name)) {
                names.add(name);
            }
        }
        if (names.isEmpty() && !exclude) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "interface list '" + spec + "' names no interface; expected for example 'eth0', 'eth,ib', "
                            + "'^docker,lo' or '=eth0'").phase("interface").build();
        }
        return new InterfaceNameFilter(spec, exclude, exact, List.copyOf(names));
    }

    /** Whether the interface called {@code name} is selected by this list. */
    boolean matches(String name) {
        boolean listed = false;
        for (String n : names) {
            if (exact ? name.equals(n) : name.startsWith(n)) {
                listed = true;
                break;
            }
        }
        return listed != exclude;
    }

    /** True for a {@code ^} list. */
    boolean isExclude() {
        return exclude;
    }

    /** True for a {@code =} list. */
    boolean isExact() {
        return exact;
    }

    /** The names or prefixes, without {@code ^}, {@code =}, ports, blanks and repeats. */
    List<String> names() {
        return names;
    }

    /** The value as it was given. */
    String spec() {
        return spec;
    }

    @Override
    public String toString() {
        return spec;
    }
}
