package org.jmscclpp.core.host;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The shared-memory files this process created and has not deleted yet, of every
 * {@link HostBackend}, and the one JVM shutdown hook that deletes them when the JVM exits with
 * files still alive (a rank that ends without closing its buffers, or calls {@code System.exit}).
 *
 * <p>A file is recorded in the same critical section that creates it, and the hook marks the
 * process as exiting in that critical section too, so no file can be created after the hook took
 * its list: it deletes every file this process made, except after {@code SIGKILL} or
 * {@code Runtime.halt}, where no Java code runs (the file names carry the pid for that case).
 * The hook is registered lazily, with the first file.
 */
final class SharedMemoryFiles {

    /** rw-------: only this user may map the memory, from the moment the file exists. */
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(EnumSet.of(PosixFilePermission.OWNER_READ,
                    PosixFilePermission.OWNER_WRITE));

    private static final Object LOCK = new Object();
    private static final Set<Path> LIVE = new HashSet<>();
    private static boolean hookRegistered;
    private static boolean exiting;

    private SharedMemoryFiles() {
    }

    /**
     * Creates {@code file}, which must not exist (O_CREAT|O_EXCL: an existing file or symbolic
     * link of that name is an error, never followed), with mode 0600, opened for reading and
     * writing, and records it for deletion at exit.
     *
     * @throws IOException           when the file system refuses
     * @throws IllegalStateException when the JVM is already shutting down
     */
    static FileChannel create(Path file) throws IOException {
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
                // Nobody is left to throw to; say which file stays behind so an operator can remove it.
                System.err.println("jmscclpp: could not delete shared-memory file " + f + " at exit: " + e);
            }
        }
    }
}
