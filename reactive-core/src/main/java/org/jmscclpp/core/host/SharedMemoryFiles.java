package org.jmscclpp.core.host;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;

/**
 * The shared-memory files this process created and has not deleted yet, of every
 * {@link HostBackend}, and the one JVM shutdown hook that deletes them when the JVM exits with
 * files still alive (a rank that ends without closing its buffers, or calls {@code System.exit}).
 *
 * <p>A file is recorded in the same critical section that creates it, and the hook marks the
 * process as exiting in that critical section too, so no file can be created after the hook took
 * its list: it deletes every file this process made, except after {@code SIGKILL} or
 * {@code Runtime.halt}, where no Java code runs.
 * The hook is registered lazily, with the first file.
 *
 * <p>For those, the file names carry their owner's pid and start time, and the first file this
 * process creates in a directory makes it {@linkplain #reclaim reclaim} the files there whose
 * owners no longer run: the next job on the host cleans up after a killed one.
 */
final class SharedMemoryFiles {

    /** rw-------: only this user may map the memory, from the moment the file exists. */
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(EnumSet.of(PosixFilePermission.OWNER_READ,
                    PosixFilePermission.OWNER_WRITE));

    private static final System.Logger LOG = Log.logger(SharedMemoryFiles.class, Subsystem.SHM);

    private static final Object LOCK = new Object();
    private static final Set<Path> LIVE = new HashSet<>();
    /**
     * The names of version 1 ({@code jmscclpp-<pid>-<nonce>-<counter>}), which carry no start time:
     * reclaimed only when no process has the pid.
     */
    private static final Pattern PID_ONLY_NAME = Pattern.compile("jmscclpp-([0-9]{1,19})-[0-9a-f]{16}-[0-9]{1,19}");

    /** The directories this process has reclaimed stale files in (once each). */
    private static final Set<Path> SWEPT = new HashSet<>();
    private static boolean hookRegistered;
    private static boolean exiting;

    private SharedMemoryFiles() {
    }

    /**
     * Creates {@code file}, which must not exist (O_CREAT|O_EXCL: an existing file or symbolic
     * link of that name is an error, never followed), with mode 0600, opened for reading and
     * writing, and records it for deletion at exit. The first file of this process in a directory
     * also {@linkplain #reclaim reclaims} the stale files there.
     *
     * @throws IOException           when the file system refuses
     * @throws IllegalStateException when the JVM is already shutting down
     */
    static FileChannel create(Path file) throws IOException {
        FileChannel channel = createAndRecord(file);
        Path dir = file.toAbsolutePath().getParent();
        boolean first;
        synchronized (LOCK) {
            first = dir != null && SWEPT.add(dir);
        }
        if (first) {
            reclaimLogged(dir, file);
        }
        return channel;
    }

    private static FileChannel createAndRecord(Path file) throws IOException {
        synchronized (LOCK) {
            if (exiting) {
                throw new IllegalStateException("the JVM is shutting down");
            }
            if (!hookRegistered) {
                // throws IllegalStateException itself once shutdown has begun
                Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("jmscclpp-shm-cleanup").unstarted(
                        SharedMemoryFiles::deleteAllAtExit));
                hookRegistered = true;
            }
            FileChannel channel = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.READ, StandardOpenOption.WRITE), OWNER_ONLY);
            LIVE.add(file);
            return channel;
        }
    }

    /**
     * Deletes {@code file} and forgets it. When the deletion fails the file stays recorded, so
     * the exit hook tries again.
     */
    static void delete(Path file) throws IOException {
        Files.deleteIfExists(file);
        synchronized (LOCK) {
            LIVE.remove(file);
        }
    }

    /** Whether {@code file} is a file this process created and has not deleted. */
    static boolean isLive(Path file) {
        synchronized (LOCK) {
            return LIVE.contains(file);
        }
    }

    private static void reclaimLogged(Path dir, Path mine) {
        try {
            Reclaimed r = reclaim(dir, mine);
            if (r.files() > 0) {
                LOG.log(System.Logger.Level.INFO, "reclaimed " + r.files() + " shared-memory file"
                        + (r.files() == 1 ? "" : "s") + " (" + r.bytes() + " bytes) in " + dir
                        + " left behind by processes that no longer run");
            }
        } catch (IOException | RuntimeException e) {
            // a failed clean-up of others' files must not fail this allocation
            LOG.log(System.Logger.Level.WARNING, "could not reclaim stale shared-memory files in " + dir + ": " + e);
        }
    }

    /** How many files {@link #reclaim} deleted and their sizes. */
    record Reclaimed(int files, long bytes) {
    }

    /**
     * Deletes the shared-memory files in {@code dir} whose owners no longer run: files whose names
     * parse exactly as {@link SharedMemoryHandle#fileName} makes them, that are regular files (a
     * symbolic link is never followed nor touched) owned by the user who owns {@code mine} (a file
     * this process just created there), made in this process's pid namespace, and whose owner's
     * pid is free or taken by a process with another start time. A file whose owner runs, or whose owner cannot be told, stays. The names
     * of earlier versions, with the pid only, are reclaimed when no process has the pid.
     */
    static Reclaimed reclaim(Path dir, Path mine) throws IOException {
        UserPrincipal me = Files.getOwner(mine, LinkOption.NOFOLLOW_LINKS);
        int files = 0;
        long bytes = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, "jmscclpp-*")) {
            for (Path entry : entries) {
                Optional<SharedMemoryHandle.Owner> owner = owner(entry.getFileName().toString());
                if (owner.isEmpty()) {
                    continue;
                }
                PosixFileAttributes attributes;
                try {
                    attributes = Files.readAttributes(entry, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (IOException e) {
                    continue;   // deleted meanwhile, or not ours to read
                }
                // a pid of another pid namespace (a container sharing this directory) says nothing here
                if (!attributes.isRegularFile() || !me.equals(attributes.owner())
                        || owner.get().pidNamespace() != ProcessStart.pidNamespace()
                        || ProcessStart.of(owner.get().pid(), owner.get().start()) != ProcessStart.Liveness.GONE) {
                    continue;
                }
                try {
                    if (Files.deleteIfExists(entry)) {
                        files++;
                        bytes += attributes.size();
                    }
                } catch (IOException e) {
                    // another process reclaims it at the same time, or the directory forbids it: leave it
                }
            }
        }
        return new Reclaimed(files, bytes);
    }

    /** The owner a name of this version or of version 1 names (start time 0: unknown). */
    private static Optional<SharedMemoryHandle.Owner> owner(String name) {
        Optional<SharedMemoryHandle.Owner> owner = SharedMemoryHandle.owner(name);
        if (owner.isPresent()) {
            return owner;
        }
        Matcher m = PID_ONLY_NAME.matcher(name);
        if (!m.matches()) {
            return Optional.empty();
        }
        try {
            return Optional.of(new SharedMemoryHandle.Owner(Long.parseLong(m.group(1)), 0, ProcessStart.pidNamespace()));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static void deleteAllAtExit() {
        List<Path> files;
        synchronized (LOCK) {
            exiting = true;
            files = new ArrayList<>(LIVE);
            LIVE.clear();
        }
        for (Path f : files) {
            try {
                Files.deleteIfExists(f);
            } catch (IOException | RuntimeException e) {
                // Nobody is left to throw to; say which file stays behind so an operator can remove it. Printed,
                // not logged: java.util.logging's own shutdown hook may already have removed every handler.
                System.err.println("jmscclpp: could not delete shared-memory file " + f + " at exit: " + e);
            }
        }
    }
}
