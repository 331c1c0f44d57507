// The `overlap` sample's kernel (OverlapSample): computes tiles into the send buffer while the
// proxy carries the finished ones to the next rank, so compute and communication overlap inside
// one launch.
//
//   overlapTiles(const PortChannelDeviceHandle* send, const PortChannelDeviceHandle* recv,
//                float* sendBuffer, int tiles, u64 tileElements, int passes, int rank, int mode,
//                u64* computedBlocks)
//
// send: channel to the next rank (src: this rank's send buffer, dst: the next rank's receive
// buffer, tile k at the same offset k * tileElements * 4 on both sides); recv: channel to the
// previous rank, only waited on. mode: bit 0 computes, bit 1 communicates. computedBlocks: one
// device word, zero between launches (this kernel leaves it zero).
//
// Block 0's thread 0 is the coordinator; blocks 1.. compute. For tile k every compute block
// writes its share of element i: x = tileValue(rank, k, i), then `passes` times x = fma(x, 0.75,
// 0.25), and adds one to computedBlocks with release (gpu scope) after a __syncthreads. The
// coordinator acquires computedBlocks >= (k + 1) * computeBlocks, then pushes putWithSignal of
// tile k: its release store into the fifo is cumulative, so the proxy's copy reads the finished
// tile, while the compute blocks already work on tile k + 1. After the last tile it consumes
// `tiles` signals of the previous rank (each after that rank's tile landed here), flushes, and
// zeroes computedBlocks for the next launch (every compute block has added its last one).
// Compute blocks never wait, so the coordinator's spin ends even where the blocks are not all
// resident at once.
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::PortChannelDeviceHandle;
using jmscclpp::u64;

namespace {

constexpr int ModeCompute = 1;
constexpr int ModeCommunicate = 2;

// The value element i of tile k starts from on rank r, in [1, 2) with 10 bits of mantissa:
// exactly representable, so OverlapSample.expected computes the same float.
__device__ __forceinline__ float tileValue(int rank, int tile, u64 i) {
  unsigned int bits = static_cast<unsigned int>((static_cast<u64>(rank) * 131 + static_cast<u64>(tile) * 31 + i) & 1023);
  return 1.0f + static_cast<float>(bits) / 1024.0f;
}

__device__ __forceinline__ void addReleaseGpu(u64* p, u64 v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ u64 loadAcquireGpu(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace

extern "C" __global__ void overlapTiles(const PortChannelDeviceHandle* send, const PortChannelDeviceHandle* recv,
                                        float* sendBuffer, int tiles, u64 tileElements, int passes, int rank,
                                        int mode, u64* computedBlocks) {
  bool compute = (mode & ModeCompute) != 0;
  bool communicate = (mode & ModeCommunicate) != 0;
  if (gridDim.x < 2) {
    JMSCCLPP_FAIL("overlapTiles: block 0 coordinates, at least one more block computes");
  }
  u64 computeBlocks = gridDim.x - 1;
  if (blockIdx.x != 0) {
    if (!compute) {
      return;
    }
    u64 tid = static_cast<u64>(blockIdx.x - 1) * blockDim.x + threadIdx.x;
    u64 nThreads = computeBlocks * blockDim.x;
    for (int k = 0; k < tiles; k++) {
      float* tile = sendBuffer + static_cast<u64>(k) * tileElements;
      for (u64 i = tid; i < tileElements; i += nThreads) {
        float x = tileValue(rank, k, i);
        for (int p = 0; p < passes; p++) {
          x = fmaf(x, 0.75f, 0.25f);
        }
        tile[i] = x;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        addReleaseGpu(computedBlocks, 1);
      }
    }
    return;
  }
  if (threadIdx.x != 0) {
    return;
  }
  PortChannelDeviceHandle out = *send;
  PortChannelDeviceHandle in = *recv;
  u64 tileBytes = tileElements * sizeof(float);
  for (int k = 0; k < tiles; k++) {
    if (compute) {
      jmscclpp::Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS);
      while (loadAcquireGpu(computedBlocks) < static_cast<u64>(k + 1) * computeBlocks) {
        if (deadline.expired()) {
          JMSCCLPP_FAIL("overlapTiles: the compute blocks did not finish a tile before the deadline");
        }
      }
    }
    if (communicate) {
      out.putWithSignal(static_cast<u64>(k) * tileBytes, static_cast<u64>(k) * tileBytes, tileBytes);
    }
  }
  if (communicate) {
    for (int k = 0; k < tiles; k++) {
      in.wait();
    }
    out.flush();
  }
  if (compute) {
    *computedBlocks = 0;
  }
}
