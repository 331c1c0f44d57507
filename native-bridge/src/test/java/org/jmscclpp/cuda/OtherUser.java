package org.jmscclpp.cuda;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Starts JVMs like this one as other users, for tests of what works between processes of
 * different users with no right over each other (no ptrace, no access to each other's files):
 * {@code setpriv --reuid=U --regid=U --clear-groups}, from a test that runs as root. The users
 * are bare numeric ids (no account is created); the children lose every capability as they
 * leave uid 0.
 *
 * <p>A user other than root may not read this JVM's class path or its Java runtime (under
 * {@code /root/.m2}, or a bundle in a private folder): {@link #in} copies what others cannot
 * read into a folder of its own under {@code /tmp}, readable by all, and {@link #close()}
 * deletes it. Each user gets a home folder of its own there.
 */
final class OtherUser implements AutoCloseable {

    private static final List<String> SETPRIV = List.of("/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv");

    private final Path shared;
    private final String java;
    private final String classPath;

    private OtherUser(Path shared, String java, String classPath) {
        this.shared = shared;
        this.java = java;
        this.classPath = classPath;
    }

    /** Why this process cannot start JVMs as other users (not root, no setpriv), or empty when it can. */
    static Optional<String> unavailableReason() {
        int uid = currentUid();
        if (uid != 0) {
            return Optional.of("starting processes as other users needs root, this test runs as uid " + uid);
        }
        if (setpriv().isEmpty()) {
            return Optional.of("setpriv (util-linux) is not installed at " + SETPRIV);
        }
        return Optional.empty();
    }

    /** The real uid of this process, from {@code /proc/self/status}. */
    static int currentUid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Integer.parseInt(line.substring(4).strip().split("\\s+")[0]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("/proc/self/status has no Uid line");
    }

    /**
     * A launcher whose children can read their class path and runtime: copies of what others cannot
     * read are made in a fresh folder under {@code /tmp}, and the runtime is probed as user
     * {@code probeUid} (copied when that user cannot run it).
     */
    static OtherUser in(int probeUid) {
        try {
            Path shared = Files.createTempDirectory(Path.of("/tmp"), "jmscclpp-users-");
            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
            List<String> entries = new ArrayList<>();
            int index = 0;
            for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                if (entry.isEmpty()) {
                    continue;
                }
                Path path = Path.of(entry).toAbsolutePath();
                if (!Files.exists(path) || readableByOthers(path)) {
                    entries.add(path.toString());
                } else {
                    Path copy = shared.resolve("cp").resolve(index++ + "-" + path.getFileName());
                    copyTree(path, copy);
                    entries.add(copy.toString());
                }
            }
            Path home = Path.of(System.getProperty("java.home"));
            String java = home.resolve("bin/java").toString();
            if (!runs(probeUid, java)) {
                Path runtime = shared.resolve("runtime");
                copyTree(home, runtime);
                java = runtime.resolve("bin/java").toString();
                if (!runs(probeUid, java)) {
                    throw new IllegalStateException("uid " + probeUid + " cannot run " + java + ", a copy of " + home);
                }
            }
            return new OtherUser(shared, java, String.join(File.pathSeparator, entries));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A process builder that runs {@code mainClass} with {@code flags} and {@code args} as user and
     * group {@code uid}, no supplementary groups, its {@code HOME} a folder of its own.
     */
    ProcessBuilder processBuilder(int uid, List<String> flags, Class<?> mainClass, List<String> args) {
        Path home = shared.resolve("home-" + uid);
        try {
            Files.createDirectories(home);
            Files.setAttribute(home, "unix:uid", uid);
            Files.setAttribute(home, "unix:gid", uid);
            Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx------"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> command = new ArrayList<>(List.of(setpriv().orElseThrow(), "--reuid=" + uid, "--regid=" + uid,
                "--clear-groups", "--", java));
        command.addAll(flags);
        command.add("-Djava.io.tmpdir=" + home);
        command.add("-cp");
        command.add(classPath);
        command.add(mainClass.getName());
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().put("HOME", home.toString());
        pb.environment().put("USER", "uid" + uid);
        return pb;
    }

    /** Deletes the copies and the homes. */
    @Override
    public void close() {
        try (Stream<Path> all = Files.walk(shared)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort: a leftover folder under /tmp
        }
    }

    private static Optional<String> setpriv() {
        return SETPRIV.stream().filter(p -> Files.isExecutable(Path.of(p))).findFirst();
    }

    private static boolean runs(int uid, String java) {
        try {
            Process p = new ProcessBuilder(setpriv().orElseThrow(), "--reuid=" + uid, "--regid=" + uid,
                    "--clear-groups", "--", java, "-version").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Whether a user with no special right can read {@code path} (a file, or a folder and all under it). */
    private static boolean readableByOthers(Path path) throws IOException {
        for (Path p = path.getParent(); p != null; p = p.getParent()) {
            if (!Files.getPosixFilePermissions(p).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                return false;
            }
        }
        try (Stream<Path> all = Files.walk(path)) {
            return all.allMatch(p -> {
                try {
                    Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
                    return perms.contains(PosixFilePermission.OTHERS_READ)
                            && (!Files.isDirectory(p) || perms.contains(PosixFilePermission.OTHERS_EXECUTE));
                } catch (IOException e) {
                    return false;
                }
            });
        }
    }

    /** Copies a file or a folder tree, making everything readable (and folders and executables usable) by all. */
    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to.getParent());
        for (Path p = to.getParent(); p.startsWith(Path.of("/tmp")) && !p.equals(Path.of("/tmp")); p = p.getParent()) {
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        try (Stream<Path> all = Files.walk(from)) {
            for (Path source : (Iterable<Path>) all::iterator) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
                } else {
                    Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
                    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString(
                            Files.isExecutable(source) ? "rwxr-xr-x" : "rw-r--r--"));
                }
            }
        }
    }
}
