package org.jmscclpp.cuda.kernel;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The shape of one kernel launch: a grid of thread blocks, the threads of one block, and the
 * dynamic shared memory each block gets ({@code kernel<<<grid, block, sharedMemoryBytes>>>} in
 * CUDA C++).
 *
 * <p>Validated on construction against the limits every GPU this project targets has (compute
 * capability 7.0 and later): every dimension positive; a block of at most 1024 threads, with
 * {@code blockZ} at most 64; {@code gridY} and {@code gridZ} at most 65535; shared memory not
 * negative. Anything else is {@link ErrorCode#INVALID_USAGE}. Whether the shared memory fits the
 * device is the driver's call at launch.
 *
 * @param gridX             blocks along x (up to 2<sup>31</sup>-1)
 * @param gridY             blocks along y
 * @param gridZ             blocks along z
 * @param blockX            threads of a block along x
 * @param blockY            threads of a block along y
 * @param blockZ            threads of a block along z
 * @param sharedMemoryBytes dynamic shared memory per block, in bytes
 */
public record LaunchConfig(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                           int sharedMemoryBytes) {

    /** Threads one block may have. */
    public static final int MAX_THREADS_PER_BLOCK = 1024;
    static final int MAX_BLOCK_Z = 64;
    static final int MAX_GRID_YZ = 65535;

    public LaunchConfig {
        String shape = shape(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes);
        if (gridX <= 0 || gridY <= 0 || gridZ <= 0 || blockX <= 0 || blockY <= 0 || blockZ <= 0) {
            throw invalid(shape, "every grid and block dimension must be positive");
        }
        long threads = (long) blockX * blockY * blockZ;
        if (threads > MAX_THREADS_PER_BLOCK) {
            throw invalid(shape, "a block has " + threads + " threads, more than " + MAX_THREADS_PER_BLOCK);
        }
        if (blockZ > MAX_BLOCK_Z) {
            throw invalid(shape, "blockZ is " + blockZ + ", more than " + MAX_BLOCK_Z);
        }
        if (gridY > MAX_GRID_YZ || gridZ > MAX_GRID_YZ) {
            throw invalid(shape, "gridY and gridZ may be at most " + MAX_GRID_YZ);
        }
        if (sharedMemoryBytes < 0) {
            throw invalid(shape, "dynamic shared memory is negative");
        }
    }

    /** {@code blocks} blocks of {@code threads} threads, one-dimensional, no dynamic shared memory. */
    public static LaunchConfig of(int blocks, int threads) {
        return new LaunchConfig(blocks, 1, 1, threads, 1, 1, 0);
    }

    /** This shape with {@code bytes} of dynamic shared memory per block. */
    public LaunchConfig withSharedMemory(int bytes) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, bytes);
    }

    /** Threads of one block. */
    public int threadsPerBlock() {
        return blockX * blockY * blockZ;
    }

    /** Blocks of the grid. */
    public long blocks() {
        return (long) gridX * gridY * gridZ;
    }

    // static: a compact constructor runs before the fields are assigned
    private static JmscclppException invalid(String shape, String why) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "launch config " + shape + ": " + why)
                .phase("launch").build();
    }

    private static String shape(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                                int sharedMemoryBytes) {
        return "<<<(" + gridX + ", " + gridY + ", " + gridZ + "), (" + blockX + ", " + blockY + ", " + blockZ + "), "
                + sharedMemoryBytes + ">>>";
    }

    /** {@code <<<(gx, gy, gz), (bx, by, bz), shared>>>}, as CUDA writes a launch. */
    @Override
    public String toString() {
        return shape(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes);
    }
}
