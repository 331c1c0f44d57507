// Allreduce (sum) of the GPUs of one host over CUDA IPC, the kernels behind CudaAllReduce: a
// one-shot LL16-packet kernel for small messages and a MemoryChannel reduce-scatter + allgather
// for large ones. Types: the ncclDataType_t codes of DataType#code (int32 2, float16 6,
// float32 7, bfloat16 9); floating types are summed in fp32 and rounded once per element when
// stored. 1 to 8 ranks. Both kernels take at most 512 threads per block (__launch_bounds__).
//
//   allreduceLL16(const MemoryChannelDeviceHandle* channels, const void* input, void* output,
//                 unsigned long long count, int dtype, void* scratch, unsigned long long slotBytes,
//                 unsigned long long* runs, int rank, int nRanks)
//   allreduceRSAG(const MemoryChannelDeviceHandle* inChannels,
//                 const MemoryChannelDeviceHandle* outChannels, const void* input, void* output,
//                 unsigned long long count, int dtype, int inPlace, int rank, int nRanks)
//
// Peers are indexed 0 .. nRanks - 2 in increasing rank order, this rank left out (peer index i is
// rank i below `rank`, rank i + 1 from it on). input and output are this rank's; input equals
// output for an in-place run. Every argument is the same on every rank except rank, the
// pointers and the handles, and every rank launches the same sequence of runs on one stream.
//
// allreduceLL16: `channels` (device memory, nRanks - 1 handles): dst = the peer's scratch, mapped
// here. `scratch` is this rank's, 2 * nRanks * slotBytes bytes, zeroed before the first run;
// slotBytes >= 16 * ceil(count * size / 8), a multiple of 16. `runs` is 128 zeroed words of device
// memory that the kernel owns (the number of runs so far, in every word). Grid: 1 to 128 blocks.
//
// allreduceRSAG: `outChannels` (device memory, gridDim.x * (nRanks - 1) handles, block b's for
// peer i at b * (nRanks - 1) + i): dst = the peer's output, mapped here, and a semaphore per
// (block, peer) that no other kernel signals or waits on. `inChannels` (nRanks - 1 handles): dst =
// the peer's input (their semaphores are not used). Grid: 1 to as many blocks as outChannels was
// built for; every block must be resident at once (at most one block per SM is the safe choice).
#include <jmscclpp/jmscclpp.cuh>

using jmscclpp::Deadline;
using jmscclpp::LL16Packet;
using jmscclpp::MemoryChannelDeviceHandle;
using jmscclpp::u32;
using jmscclpp::u64;

namespace {

constexpr int kInt32 = 2;
constexpr int kFloat16 = 6;
constexpr int kFloat32 = 7;
constexpr int kBfloat16 = 9;

constexpr int kMaxRanks = 8;
constexpr int kMaxThreads = 512;
// Length of allreduceLL16's `runs`, and so its largest grid.
constexpr u32 kLLMaxBlocks = 128;
// Packet flags run 1 .. kFlagPeriod and repeat; the period is even, so the two runs that share a
// half of the scratch (runs two apart) never carry the same flag, and flag 0 (zeroed scratch)
// is never sent.
constexpr u64 kFlagPeriod = 0xFFFFFFFEull;

// ---------------------------------------------------------------------------------------------
// element conversions (no system headers under NVRTC: cvt for fp16, bit arithmetic for bf16)

__forceinline__ __device__ float halfToFloat(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__forceinline__ __device__ unsigned short floatToHalf(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__forceinline__ __device__ float bf16ToFloat(unsigned short b) { return __uint_as_float(static_cast<u32>(b) << 16); }

// Round to nearest, ties to even; NaN stays a (quiet) NaN of the same sign, whatever its payload,
// where the rounding carry could otherwise turn it into infinity.
__forceinline__ __device__ unsigned short floatToBf16(float f) {
  u32 bits = __float_as_uint(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<unsigned short>((bits >> 16) | 0x0040u);
  }
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<unsigned short>(bits >> 16);
}

// ---------------------------------------------------------------------------------------------
// sums of 32-bit words: one element of a 4-byte type, two of a 2-byte type

template <int T>
struct WordSum;

template <>
struct WordSum<kFloat32> {
  float a;
  __forceinline__ __device__ void init(u32 w) { a = __uint_as_float(w); }
  __forceinline__ __device__ void add(u32 w) { a += __uint_as_float(w); }
  __forceinline__ __device__ u32 get() const { return __float_as_uint(a); }
};

template <>
struct WordSum<kInt32> {
  u32 a;  // two's complement: the unsigned sum has the bits of the int sum, wrapping as NCCL's does
  __forceinline__ __device__ void init(u32 w) { a = w; }
  __forceinline__ __device__ void add(u32 w) { a += w; }
  __forceinline__ __device__ u32 get() const { return a; }
};

template <>
struct WordSum<kFloat16> {
  float lo, hi;
  __forceinline__ __device__ void init(u32 w) {
    lo = halfToFloat(static_cast<unsigned short>(w));
    hi = halfToFloat(static_cast<unsigned short>(w >> 16));
  }
  __forceinline__ __device__ void add(u32 w) {
    lo += halfToFloat(static_cast<unsigned short>(w));
    hi += halfToFloat(static_cast<unsigned short>(w >> 16));
  }
  __forceinline__ __device__ u32 get() const {
    return static_cast<u32>(floatToHalf(lo)) | (static_cast<u32>(floatToHalf(hi)) << 16);
  }
};

template <>
struct WordSum<kBfloat16> {
  float lo, hi;
  __forceinline__ __device__ void init(u32 w) {
    lo = bf16ToFloat(static_cast<unsigned short>(w));
    hi = bf16ToFloat(static_cast<unsigned short>(w >> 16));
  }
  __forceinline__ __device__ void add(u32 w) {
    lo += bf16ToFloat(static_cast<unsigned short>(w));
    hi += bf16ToFloat(static_cast<unsigned short>(w >> 16));
  }
  __forceinline__ __device__ u32 get() const {
    return static_cast<u32>(floatToBf16(lo)) | (static_cast<u32>(floatToBf16(hi)) << 16);
  }
};

template <int T>
struct Sum2 {
  WordSum<T> x, y;
  __forceinline__ __device__ void init(uint2 v) {
    x.init(v.x);
    y.init(v.y);
  }
  __forceinline__ __device__ void add(uint2 v) {
    x.add(v.x);
    y.add(v.y);
  }
  __forceinline__ __device__ uint2 get() const { return make_uint2(x.get(), y.get()); }
};

template <int T>
struct Sum4 {
  WordSum<T> x, y, z, w;
  __forceinline__ __device__ void init(uint4 v) {
    x.init(v.x);
    y.init(v.y);
    z.init(v.z);
    w.init(v.w);
  }
  __forceinline__ __device__ void add(uint4 v) {
    x.add(v.x);
    y.add(v.y);
    z.add(v.z);
    w.add(v.w);
  }
  __forceinline__ __device__ uint4 get() const { return make_uint4(x.get(), y.get(), z.get(), w.get()); }
};

template <int T>
__host__ __device__ constexpr u64 elementBytes() {
  return (T == kFloat16 || T == kBfloat16) ? 2 : 4;
}

// Peer index of rank q (not this rank).
__forceinline__ __device__ int peerIndex(int q, int rank) { return q < rank ? q : q - 1; }

// ---------------------------------------------------------------------------------------------
// allreduceLL16

// The 8 bytes of payload of packet i of a buffer of `bytes`: a whole 8-byte load, or for the last
// packet of a buffer whose size is not a multiple of 8 the bytes that exist (in 16-bit pieces:
// every size here is even) and zeros after them. Never reads past the buffer.
__forceinline__ __device__ uint2 loadPayload(const void* buffer, u64 bytes, u64 i) {
  u64 offset = i * 8;
  if (offset + 8 <= bytes) {
    return reinterpret_cast<const uint2*>(buffer)[i];
  }
  const unsigned short* halves = reinterpret_cast<const unsigned short*>(buffer) + i * 4;
  u32 part[2] = {0, 0};
  u32 valid = static_cast<u32>((bytes - offset) / 2);
  for (u32 k = 0; k < valid; k++) {
    part[k / 2] |= static_cast<u32>(halves[k]) << (16 * (k % 2));
  }
  return make_uint2(part[0], part[1]);
}

// Stores the bytes of packet i that lie inside the buffer of `bytes` (see loadPayload).
__forceinline__ __device__ void storePayload(void* buffer, u64 bytes, u64 i, uint2 v) {
  u64 offset = i * 8;
  if (offset + 8 <= bytes) {
    reinterpret_cast<uint2*>(buffer)[i] = v;
    return;
  }
  unsigned short* halves = reinterpret_cast<unsigned short*>(buffer) + i * 4;
  u32 part[2] = {v.x, v.y};
  u32 valid = static_cast<u32>((bytes - offset) / 2);
  for (u32 k = 0; k < valid; k++) {
    halves[k] = static_cast<unsigned short>(part[k / 2] >> (16 * (k % 2)));
  }
}

// One run: every rank sends its whole input as packets into slot `rank` of the current half of
// every peer's scratch, then each thread waits for its packets in every slot of its own scratch
// and adds them to its input, in rank order (so that every rank computes the same bits).
//
// Thread t handles packets t, t + stride, ... in both loops, so in place the input word a thread
// overwrites is one it alone has read. The half of the scratch is the run's parity: a rank
// writes half h of a peer's scratch in run k + 2 only after the peer finished run k (it waited,
// in run k + 1, for packets the peer wrote in run k + 1, after its run k had ended on its
// stream), so run k's packets are all read by then; and run k + 2's flag differs from run k's.
template <int T>
__device__ void ll16(const MemoryChannelDeviceHandle* channels, const void* input, void* output, u64 count,
                     char* scratch, u64 slotBytes, u64* runs, int rank, int nRanks) {
  __shared__ char* peerSlots[kMaxRanks];
  const u64 bytes = count * elementBytes<T>();
  const u64 packets = (bytes + 7) / 8;
  // every word of runs holds the same count between runs; each block reads its own
  const u64 run = runs[blockIdx.x];
  const u32 flag = static_cast<u32>(run % kFlagPeriod) + 1;
  const u64 half = (run & 1) * static_cast<u64>(nRanks) * slotBytes;
  const int nPeers = nRanks - 1;
  if (threadIdx.x < nPeers) {
    peerSlots[threadIdx.x] = static_cast<char*>(channels[threadIdx.x].dst) + half + rank * slotBytes;
  }
  __syncthreads();

  const u64 first = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 i = first; i < packets; i += stride) {
    uint2 v = loadPayload(input, bytes, i);
    for (int p = 0; p < nPeers; p++) {
      reinterpret_cast<LL16Packet*>(peerSlots[p])[i].write(v.x, v.y, flag);
    }
  }

  const char* mine = scratch + half;
  Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS);
  for (u64 i = first; i < packets; i += stride) {
    uint2 own = loadPayload(input, bytes, i);
    Sum2<T> sum;
    for (int q = 0; q < nRanks; q++) {
      uint2 v = q == rank ? own : reinterpret_cast<const LL16Packet*>(mine + q * slotBytes)[i].read(flag, deadline);
      if (q == 0) {
        sum.init(v);
      } else {
        sum.add(v);
      }
    }
    storePayload(output, bytes, i, sum.get());
  }

  // Every thread of the block read `run` above; the next run's blocks start after this grid
  // ended (same stream), so they see the new count, whatever their number.
  __syncthreads();
  if (threadIdx.x == 0) {
    for (u32 b = blockIdx.x; b < kLLMaxBlocks; b += gridDim.x) {
      runs[b] = run + 1;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// allreduceRSAG

// The barrier of block b with block b of every peer: thread i < nPeers signals peer i (release:
// after everything the block wrote before the __syncthreads that precedes this call) and waits
// for peer i's signal (acquire); the caller's next __syncthreads passes that on to the block.
__forceinline__ __device__ void blockBarrier(const MemoryChannelDeviceHandle* outChannels, int nPeers) {
  if (threadIdx.x < nPeers) {
    MemoryChannelDeviceHandle ch = outChannels[blockIdx.x * nPeers + threadIdx.x];
    ch.signal();
    ch.wait();
  }
}

// Rank r owns vectors [V r / n, V (r + 1) / n) of the V whole 16-byte vectors, and the last rank
// also the elements after them (fewer than 16 bytes). The owner loads its part of every rank's
// input (peers' over NVLink), sums in rank order and stores the sum into its own output and every
// peer's. Only the owner reads or writes a part anywhere, each word by one thread, load before
// store: in place, nothing it overwrites is read by anyone afterwards.
//
// Barrier 1 (per block, with the same block of every peer): a peer's input is filled and its
// output free (its host is done with the previous result) once its kernel runs. Barrier 2: the
// peers' sums are in this rank's output when its kernel ends; and no peer reads this rank's
// input of this run after it, so the host may refill it once the run is over.
//
// N (the number of ranks) is a template parameter so that the loops over ranks unroll and every
// load of an iteration is issued before the first add waits: N * U vectors of 16 bytes in flight
// per thread, U chosen to keep that near 8 within the register budget of 512-thread blocks.
template <int T, int N>
__device__ void rsag(const MemoryChannelDeviceHandle* inChannels, const MemoryChannelDeviceHandle* outChannels,
                     const void* input, void* output, u64 count, bool inPlace, int rank, const uint4** sources,
                     uint4** targets) {
  constexpr int U = N <= 2 ? 4 : (N <= 4 ? 2 : 1);
  constexpr int nPeers = N - 1;
  if (threadIdx.x < N) {
    int q = threadIdx.x;
    if (q == rank) {
      sources[q] = static_cast<const uint4*>(input);
      targets[q] = static_cast<uint4*>(output);
    } else {
      int i = peerIndex(q, rank);
      sources[q] = static_cast<const uint4*>(inPlace ? outChannels[i].dst : inChannels[i].dst);
      targets[q] = static_cast<uint4*>(outChannels[i].dst);
    }
  }
  blockBarrier(outChannels, nPeers);
  __syncthreads();

  const u64 bytes = count * elementBytes<T>();
  const u64 vectors = bytes / 16;
  const u64 begin = vectors * rank / N;
  const u64 end = vectors * (rank + 1) / N;
  const u64 step = static_cast<u64>(gridDim.x) * blockDim.x * U;
  for (u64 base = begin + static_cast<u64>(blockIdx.x) * blockDim.x * U + threadIdx.x; base < end; base += step) {
    uint4 v[N][U];
#pragma unroll
    for (int q = 0; q < N; q++) {
#pragma unroll
      for (int k = 0; k < U; k++) {
        u64 at = base + static_cast<u64>(k) * blockDim.x;
        v[q][k] = at < end ? sources[q][at] : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int k = 0; k < U; k++) {
      u64 at = base + static_cast<u64>(k) * blockDim.x;
      Sum4<T> sum;
      sum.init(v[0][k]);
#pragma unroll
      for (int q = 1; q < N; q++) {
        sum.add(v[q][k]);
      }
      if (at < end) {
        uint4 s = sum.get();
#pragma unroll
        for (int q = 0; q < N; q++) {
          targets[q][at] = s;
        }
      }
    }
  }

  // the elements after the last whole vector, one per thread of block 0 of the last rank
  constexpr u64 size = elementBytes<T>();
  const u64 tailFirst = vectors * 16 / size;
  if (rank == N - 1 && blockIdx.x == 0 && threadIdx.x < count - tailFirst) {
    u64 e = tailFirst + threadIdx.x;
    WordSum<T> sum;
#pragma unroll
    for (int q = 0; q < N; q++) {
      // a 2-byte element sits in the low half of the word, zeros above it
      u32 w = size == 4 ? reinterpret_cast<const u32*>(sources[q])[e]
                        : reinterpret_cast<const unsigned short*>(sources[q])[e];
      if (q == 0) {
        sum.init(w);
      } else {
        sum.add(w);
      }
    }
    u32 s = sum.get();
#pragma unroll
    for (int q = 0; q < N; q++) {
      if (size == 4) {
        reinterpret_cast<u32*>(targets[q])[e] = s;
      } else {
        reinterpret_cast<unsigned short*>(targets[q])[e] = static_cast<unsigned short>(s);
      }
    }
  }

  __syncthreads();
  blockBarrier(outChannels, nPeers);
}

template <int T>
__device__ void rsagOfRanks(const MemoryChannelDeviceHandle* inChannels, const MemoryChannelDeviceHandle* outChannels,
                            const void* input, void* output, u64 count, bool inPlace, int rank, int nRanks) {
  // shared by every instantiation below (each would otherwise get its own)
  __shared__ const uint4* sources[kMaxRanks];
  __shared__ uint4* targets[kMaxRanks];
  switch (nRanks) {
    case 1: rsag<T, 1>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 2: rsag<T, 2>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 3: rsag<T, 3>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 4: rsag<T, 4>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 5: rsag<T, 5>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 6: rsag<T, 6>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    case 7: rsag<T, 7>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
    default: rsag<T, 8>(inChannels, outChannels, input, output, count, inPlace, rank, sources, targets); break;
  }
}

__device__ void checkRanks(int rank, int nRanks) {
  if (nRanks < 1 || nRanks > kMaxRanks || rank < 0 || rank >= nRanks) {
    JMSCCLPP_FAIL("allreduce: rank or nRanks out of range (1 to 8 ranks)");
  }
  if (blockDim.x > kMaxThreads || blockDim.y != 1 || blockDim.z != 1) {
    JMSCCLPP_FAIL("allreduce: blocks of at most 512 threads, one-dimensional");
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kMaxThreads)
    allreduceLL16(const MemoryChannelDeviceHandle* channels, const void* input, void* output,
                  unsigned long long count, int dtype, void* scratch, unsigned long long slotBytes,
                  unsigned long long* runs, int rank, int nRanks) {
  checkRanks(rank, nRanks);
  if (gridDim.x > kLLMaxBlocks) {
    JMSCCLPP_FAIL("allreduceLL16: at most 128 blocks");
  }
  char* s = static_cast<char*>(scratch);
  switch (dtype) {
    case kFloat32:
      ll16<kFloat32>(channels, input, output, count, s, slotBytes, runs, rank, nRanks);
      break;
    case kFloat16:
      ll16<kFloat16>(channels, input, output, count, s, slotBytes, runs, rank, nRanks);
      break;
    case kBfloat16:
      ll16<kBfloat16>(channels, input, output, count, s, slotBytes, runs, rank, nRanks);
      break;
    case kInt32:
      ll16<kInt32>(channels, input, output, count, s, slotBytes, runs, rank, nRanks);
      break;
    default:
      JMSCCLPP_FAIL("allreduceLL16: dtype is not int32 (2), float16 (6), float32 (7) or bfloat16 (9)");
  }
}

extern "C" __global__ void __launch_bounds__(kMaxThreads)
    allreduceRSAG(const MemoryChannelDeviceHandle* inChannels, const MemoryChannelDeviceHandle* outChannels,
                  const void* input, void* output, unsigned long long count, int dtype, int inPlace, int rank,
                  int nRanks) {
  checkRanks(rank, nRanks);
  bool place = inPlace != 0;
  switch (dtype) {
    case kFloat32:
      rsagOfRanks<kFloat32>(inChannels, outChannels, input, output, count, place, rank, nRanks);
      break;
    case kFloat16:
      rsagOfRanks<kFloat16>(inChannels, outChannels, input, output, count, place, rank, nRanks);
      break;
    case kBfloat16:
      rsagOfRanks<kBfloat16>(inChannels, outChannels, input, output, count, place, rank, nRanks);
      break;
    case kInt32:
      rsagOfRanks<kInt32>(inChannels, outChannels, input, output, count, place, rank, nRanks);
      break;
    default:
      JMSCCLPP_FAIL("allreduceRSAG: dtype is not int32 (2), float16 (6), float32 (7) or bfloat16 (9)");
  }
}
