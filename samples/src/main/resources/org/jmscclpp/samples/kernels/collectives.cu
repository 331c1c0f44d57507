// The CUDA collectives of the samples and of `jmscclpp bench coll` that move data without
// reducing it: allgather, alltoall and sendrecv, each over MemoryChannels (this GPU's threads store
// into the peers' memory, mapped here through CUDA IPC) and over PortChannels (the rank's proxy
// copies, the kernel pushes triggers and waits). The Java side is CudaMemoryCollective and
// CudaPortCollective; the arguments below are theirs.
//
// Channels come as device arrays of encoded handles, one per peer, peers in increasing rank order
// without this rank (peer index i is rank i for i < rank, rank i + 1 otherwise). Every channel's
// dst is the peer's output buffer. Offsets and sizes are in bytes.
//
// What one run leaves for the next lives in device memory and is advanced here: each semaphore's
// expected-inbound word (one per channel) counts the signals consumed, so a CUDA graph replaying
// many runs stays in step with the peers. Every rank launches the same kernels with the same sizes
// and therefore the same grid, which is what keeps the signal counts of both ends equal.
//
// Ordering: a MemoryChannel kernel's block stores its share into the peers, __syncthreads, then
// signals each peer once with a release add (cumulative: it covers every store of the block). The
// rank's block 0 then waits for gridDim.x signals of every peer: the kernel ends only when every
// peer's every block has landed its data here. A peer's signals of the next run come after all of
// this run's (its next kernel starts after this one ended on its stream), so counting never mixes
// runs. A PortChannel kernel pushes putWithSignal (the proxy raises the peer's semaphore after the
// data), waits for every peer's signal, and flushes, so the input may be rewritten once it ended.
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::MemoryChannelDeviceHandle;
using jmscclpp::PortChannelDeviceHandle;
using jmscclpp::u32;
using jmscclpp::u64;

namespace {

// The most destinations one store loop feeds: 7 peers and this rank's own output.
constexpr int MaxDestinations = 8;
// 16-byte words each thread keeps in flight per round of the copy loops.
constexpr int Unroll = 4;
// The largest size and offset a proxy trigger carries (32-bit fields); puts are cut into pieces
// of at most this many bytes. Java keeps every buffer below 4 GiB, so offsets always fit.
constexpr u64 MaxPutBytes = 1ULL << 30;

__device__ __forceinline__ int peerRank(int index, int rank) { return index < rank ? index : index + 1; }

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Copies `bytes` from src to each of the nDst destinations, as thread `tid` of `nThreads`: every
// source word is loaded once and stored to every destination. 16-byte words, Unroll of them per
// thread and round, when src and every destination are 16-byte aligned; jmscclpp::copy (the
// widest access both ends allow) per destination otherwise. The tail below 16 bytes goes byte by
// byte. Plain stores: the caller orders them (__syncthreads, then a release signal).
__device__ __forceinline__ void broadcastCopy(char* const* dsts, int nDst, const char* src, u64 bytes, u32 tid,
                                              u32 nThreads) {
  bool vector = aligned16(src);
  for (int d = 0; d < nDst; d++) {
    vector = vector && aligned16(dsts[d]);
  }
  if (!vector) {
    for (int d = 0; d < nDst; d++) {
      jmscclpp::copy(dsts[d], src, bytes, tid, nThreads);
    }
    return;
  }
  const uint4* from = reinterpret_cast<const uint4*>(src);
  u64 words = bytes / 16;
  u64 i = tid;
  for (; i + (Unroll - 1) * static_cast<u64>(nThreads) < words; i += Unroll * static_cast<u64>(nThreads)) {
    uint4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; u++) {
      v[u] = from[i + u * static_cast<u64>(nThreads)];
    }
    for (int d = 0; d < nDst; d++) {
      uint4* to = reinterpret_cast<uint4*>(dsts[d]);
#pragma unroll
      for (int u = 0; u < Unroll; u++) {
        to[i + u * static_cast<u64>(nThreads)] = v[u];
      }
    }
  }
  for (; i < words; i += nThreads) {
    uint4 v = from[i];
    for (int d = 0; d < nDst; d++) {
      reinterpret_cast<uint4*>(dsts[d])[i] = v;
    }
  }
  for (u64 b = words * 16 + tid; b < bytes; b += nThreads) {
    char c = src[b];
    for (int d = 0; d < nDst; d++) {
      dsts[d][b] = c;
    }
  }
}

__device__ __forceinline__ void copyOne(char* dst, const char* src, u64 bytes, u32 tid, u32 nThreads) {
  char* dsts[1] = {dst};
  broadcastCopy(dsts, 1, src, bytes, tid, nThreads);
}

__device__ __forceinline__ u32 globalThread() { return blockIdx.x * blockDim.x + threadIdx.x; }

__device__ __forceinline__ u32 globalThreads() { return gridDim.x * blockDim.x; }

// The end of a MemoryChannel kernel: this block's stores are done (all threads passed the
// barrier), thread i < nPeers signals peer i, and in block 0 thread i then consumes gridDim.x
// signals of peer i, one per block of the peer's launch.
__device__ __forceinline__ void signalAndWaitAll(const MemoryChannelDeviceHandle* channels, int nPeers) {
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < nPeers) {
    MemoryChannelDeviceHandle ch = channels[threadIdx.x];
    ch.signal();
    if (blockIdx.x == 0) {
      for (u32 b = 0; b < gridDim.x; b++) {
        ch.wait();
      }
    }
  }
}

__device__ __forceinline__ void checkPeers(int nPeers, const char* message) {
  if (nPeers < 1 || nPeers >= MaxDestinations || static_cast<int>(blockDim.x) < nPeers) {
    JMSCCLPP_FAIL(message);
  }
}

// putWithSignal of `bytes` in pieces a trigger can carry; only the last piece signals, and the
// proxy raises the peer's semaphore after all of them (one connection, in order).
__device__ __forceinline__ void putAllWithSignal(PortChannelDeviceHandle& ch, u64 dstOffset, u64 srcOffset,
                                                 u64 bytes) {
  while (bytes > MaxPutBytes) {
    ch.put(dstOffset, srcOffset, MaxPutBytes);
    dstOffset += MaxPutBytes;
    srcOffset += MaxPutBytes;
    bytes -= MaxPutBytes;
  }
  ch.putWithSignal(dstOffset, srcOffset, bytes);
}

}  // namespace

// ---- allgather

// MemoryChannel allgather: every thread of the grid stores its share of this rank's slice
// (`sliceBytes` at `src`) into slot `rank` of every peer's output and, when outOfPlace, of this
// rank's `output`; then signalAndWaitAll. In place, src is output + rank * sliceBytes and the own
// slot is already there. Any grid of at least nPeers threads per block.
extern "C" __global__ void allgatherMemory(const MemoryChannelDeviceHandle* channels, int nPeers, const char* src,
                                           char* output, u64 sliceBytes, int rank, int outOfPlace) {
  checkPeers(nPeers, "allgatherMemory: 1 to 7 peers, and at least one thread per peer");
  char* dsts[MaxDestinations];
  int nDst = 0;
  for (int i = 0; i < nPeers; i++) {
    dsts[nDst++] = static_cast<char*>(channels[i].dst) + static_cast<u64>(rank) * sliceBytes;
  }
  if (outOfPlace) {
    dsts[nDst++] = output + static_cast<u64>(rank) * sliceBytes;
  }
  broadcastCopy(dsts, nDst, src, sliceBytes, globalThread(), globalThreads());
  signalAndWaitAll(channels, nPeers);
}

// PortChannel allgather: thread i < nPeers of block 0 puts this rank's slice (channels' src memory
// at srcOffset: the input at 0 out of place, the output at rank * sliceBytes in place) into slot
// `rank` of peer i's output with a signal; meanwhile, out of place, the whole grid copies `src`
// into this rank's slot of `output`. Then each of those threads waits for its peer's signal and
// flushes its channel.
extern "C" __global__ void allgatherPort(const PortChannelDeviceHandle* channels, int nPeers, const char* src,
                                         char* output, u64 sliceBytes, u64 srcOffset, int rank, int outOfPlace) {
  checkPeers(nPeers, "allgatherPort: 1 to 7 peers, and at least one thread per peer");
  bool porter = blockIdx.x == 0 && static_cast<int>(threadIdx.x) < nPeers;
  PortChannelDeviceHandle ch;
  if (porter) {
    ch = channels[threadIdx.x];
    putAllWithSignal(ch, static_cast<u64>(rank) * sliceBytes, srcOffset, sliceBytes);
  }
  if (outOfPlace) {
    copyOne(output + static_cast<u64>(rank) * sliceBytes, src, sliceBytes, globalThread(), globalThreads());
  }
  if (porter) {
    ch.wait();
    ch.flush();
  }
}

// ---- alltoall

// MemoryChannel alltoall: chunk j of `input` (chunkBytes at j * chunkBytes) goes to slot `rank` of
// rank j's output: stored by the whole grid into each peer's mapped output, and into this rank's
// own `output` for j = rank; then signalAndWaitAll.
extern "C" __global__ void alltoallMemory(const MemoryChannelDeviceHandle* channels, int nPeers, const char* input,
                                          char* output, u64 chunkBytes, int rank) {
  checkPeers(nPeers, "alltoallMemory: 1 to 7 peers, and at least one thread per peer");
  u32 tid = globalThread();
  u32 nThreads = globalThreads();
  u64 slot = static_cast<u64>(rank) * chunkBytes;
  for (int i = 0; i < nPeers; i++) {
    copyOne(static_cast<char*>(channels[i].dst) + slot, input + static_cast<u64>(peerRank(i, rank)) * chunkBytes,
            chunkBytes, tid, nThreads);
  }
  copyOne(output + slot, input + slot, chunkBytes, tid, nThreads);
  signalAndWaitAll(channels, nPeers);
}

// PortChannel alltoall (the design document's localAlltoall): thread i < nPeers of block 0 puts
// chunk peerRank(i) of the input (the channels' src) into slot `rank` of that peer's output with a
// signal, while the grid copies this rank's own chunk locally; then each waits for its peer's
// signal and flushes.
extern "C" __global__ void alltoallPort(const PortChannelDeviceHandle* channels, int nPeers, const char* input,
                                        char* output, u64 chunkBytes, int rank) {
  checkPeers(nPeers, "alltoallPort: 1 to 7 peers, and at least one thread per peer");
  bool porter = blockIdx.x == 0 && static_cast<int>(threadIdx.x) < nPeers;
  u64 slot = static_cast<u64>(rank) * chunkBytes;
  PortChannelDeviceHandle ch;
  if (porter) {
    ch = channels[threadIdx.x];
    putAllWithSignal(ch, slot, static_cast<u64>(peerRank(threadIdx.x, rank)) * chunkBytes, chunkBytes);
  }
  copyOne(output + slot, input + slot, chunkBytes, globalThread(), globalThreads());
  if (porter) {
    ch.wait();
    ch.flush();
  }
}

// ---- sendrecv

// MemoryChannel sendrecv: the grid stores `bytes` of `input` into the output of the next rank
// (send's dst), each block signals it, and block 0's thread 0 consumes gridDim.x signals of the
// previous rank (recv). With two ranks send and recv are the same channel.
extern "C" __global__ void sendrecvMemory(const MemoryChannelDeviceHandle* send, const MemoryChannelDeviceHandle* recv,
                                          const char* input, u64 bytes) {
  copyOne(static_cast<char*>(send->dst), input, bytes, globalThread(), globalThreads());
  __syncthreads();
  if (threadIdx.x == 0) {
    MemoryChannelDeviceHandle out = *send;
    out.signal();
    if (blockIdx.x == 0) {
      MemoryChannelDeviceHandle in = *recv;
      for (u32 b = 0; b < gridDim.x; b++) {
        in.wait();
      }
    }
  }
}

// PortChannel sendrecv: one thread puts `bytes` of the input (send's src) into the next rank's
// output with a signal, waits for the previous rank's signal (recv), and flushes send.
extern "C" __global__ void sendrecvPort(const PortChannelDeviceHandle* send, const PortChannelDeviceHandle* recv,
                                        u64 bytes) {
  if (blockIdx.x != 0 || threadIdx.x != 0) {
    return;
  }
  PortChannelDeviceHandle out = *send;
  PortChannelDeviceHandle in = *recv;
  putAllWithSignal(out, 0, 0, bytes);
  in.wait();
  out.flush();
}
