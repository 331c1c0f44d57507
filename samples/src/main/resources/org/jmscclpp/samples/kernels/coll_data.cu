// The data every collective is checked with (CollectiveData on the CUDA backend): inputs drawn
// from a seed, outputs poisoned before a run, every output element checked after it. The value
// functions are __host__ __device__ and mirror CollectiveValues.java bit for bit (a test compiles
// them for the CPU with nvcc and compares); no system headers, so NVRTC compiles this file alone.
//
// Codes: kind 0 ALLREDUCE, 1 ALLGATHER, 2 ALLTOALL, 3 SENDRECV; type = ncclDataType_t
// (2 int32, 6 float16, 7 float32, 9 bfloat16). count is the collective's count column
// (elements per rank for allgather, per peer for alltoall). Launch each with any grid (the
// loops stride over it), except collDataReset: one thread.
//
//   collDataInput(void* dst, int kind, int type, int n, int rank, long long count, unsigned long long seed)
//       writes this rank's input elements (count, or n * count for alltoall) at dst
//   collDataPoison(void* out, int type, long long elements)
//       writes the poison (all ones: 0xFFFF, 0xFFFFFFFF) into the first `elements` elements of out
//   collDataReset(unsigned long long* wrong)
//       *wrong = 0
//   collDataCheck(const void* out, int kind, int type, int n, int rank, long long count,
//                 unsigned long long seed, unsigned long long* wrong)
//       adds to *wrong the number of output elements that differ from what the run must leave

#ifndef JMSCCLPP_COLL_HD
#define JMSCCLPP_COLL_HD __host__ __device__
#endif

namespace colldata {

typedef unsigned long long u64;
typedef unsigned int u32;
typedef long long i64;

constexpr int ALLREDUCE = 0;
constexpr int ALLGATHER = 1;
constexpr int ALLTOALL = 2;
constexpr int SENDRECV = 3;

constexpr int INT32 = 2;
constexpr int FLOAT16 = 6;
constexpr int FLOAT32 = 7;
constexpr int BFLOAT16 = 9;

constexpr u64 GOLDEN = 0x9E3779B97F4A7C15ull;

// splitmix64's finalizer
JMSCCLPP_COLL_HD inline u64 mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The 64 random bits of element `index` of rank `rank`'s input in the run of `seed`: element
// index of the splitmix64 sequence whose state starts at a per-(seed, rank) value.
JMSCCLPP_COLL_HD inline u64 word(u64 seed, int rank, i64 index) {
  u64 base = mix(seed + GOLDEN * static_cast<u64>(static_cast<i64>(rank) + 1));
  return mix(base + GOLDEN * static_cast<u64>(index + 1));
}

JMSCCLPP_COLL_HD inline int bytesOf(int type) {
  return type == FLOAT16 || type == BFLOAT16 ? 2 : 4;
}

// All ones: a NaN in every float type and odd for int32; no input of a data-moving kind holds it
// (rawBits avoids it) and no allreduce result does (float sums are finite, int32 inputs are even).
JMSCCLPP_COLL_HD inline u32 poison(int type) {
  return bytesOf(type) == 2 ? 0xFFFFu : 0xFFFFFFFFu;
}

// Any bits of the element's width but the poison.
JMSCCLPP_COLL_HD inline u32 rawBits(int type, u64 w) {
  u32 b = static_cast<u32>(w) & poison(type);
  return b == poison(type) ? (b ^ 1u) : b;
}

// An allreduce input of a float type is quarters(w) / 4, a multiple of 1/4 in [-2, 2).
JMSCCLPP_COLL_HD inline int quarters(u64 w) {
  return static_cast<int>(w >> 60) - 8;
}

// The bits of q / 4 in `type` (a float type), rounded to nearest even; built from the integer so
// that host and device agree without float arithmetic. q / 4 is exact in every type while
// |q| < 2^(mantissa bits + 1): 512 quarters in bfloat16, so sums of up to 64 inputs in [-2, 2).
JMSCCLPP_COLL_HD inline u32 quartersToBits(int type, i64 q) {
  int mbits = type == FLOAT32 ? 23 : type == FLOAT16 ? 10 : 7;
  int ebits = type == FLOAT16 ? 5 : 8;
  int width = type == FLOAT32 ? 32 : 16;
  u32 sign = q < 0 ? (1u << (width - 1)) : 0u;
  u64 m = q < 0 ? static_cast<u64>(-q) : static_cast<u64>(q);
  if (m == 0) {
    return 0u;
  }
  int h = 0;
  while ((m >> (h + 1)) != 0) {
    h++;
  }
  int e = h - 2;
  u64 frac;
  if (h <= mbits) {
    frac = m << (mbits - h);
  } else {
    int shift = h - mbits;
    u64 rest = m & ((1ull << shift) - 1);
    u64 half = 1ull << (shift - 1);
    frac = m >> shift;
    if (rest > half || (rest == half && (frac & 1ull) != 0)) {
      frac++;
    }
    if ((frac >> (mbits + 1)) != 0) {
      frac >>= 1;
      e++;
    }
  }
  int biased = e + (1 << (ebits - 1)) - 1;
  u32 maxExponent = (1u << ebits) - 1;
  if (biased >= static_cast<int>(maxExponent)) {
    return sign | (maxExponent << mbits);
  }
  return sign | (static_cast<u32>(biased) << mbits) | (static_cast<u32>(frac) & ((1u << mbits) - 1));
}

JMSCCLPP_COLL_HD inline u32 reduceInputBits(int type, u64 w) {
  return type == INT32 ? (static_cast<u32>(w) & ~1u) : quartersToBits(type, quarters(w));
}

JMSCCLPP_COLL_HD inline i64 inputElements(int kind, int n, i64 count) {
  return kind == ALLTOALL ? count * n : count;
}

JMSCCLPP_COLL_HD inline i64 outputElements(int kind, int n, i64 count) {
  return kind == ALLGATHER || kind == ALLTOALL ? count * n : count;
}

// Element `index` of rank `rank`'s input.
JMSCCLPP_COLL_HD inline u32 inputBits(int kind, int type, u64 seed, int rank, i64 index) {
  u64 w = word(seed, rank, index);
  return kind == ALLREDUCE ? reduceInputBits(type, w) : rawBits(type, w);
}

// The sum over n ranks of element `index`: wrapping for int32, exact for the float types.
JMSCCLPP_COLL_HD inline u32 reducedBits(int type, u64 seed, int n, i64 index) {
  if (type == INT32) {
    u32 sum = 0;
    for (int p = 0; p < n; p++) {
      sum += reduceInputBits(type, word(seed, p, index));
    }
    return sum;
  }
  i64 q = 0;
  for (int p = 0; p < n; p++) {
    q += quarters(word(seed, p, index));
  }
  return quartersToBits(type, q);
}

// What output element e of rank `rank` holds after a correct run.
JMSCCLPP_COLL_HD inline u32 expectedBits(int kind, int type, u64 seed, int n, int rank, i64 count, i64 e) {
  switch (kind) {
    case ALLREDUCE:
      return reducedBits(type, seed, n, e);
    case ALLGATHER:
      return inputBits(kind, type, seed, static_cast<int>(e / count), e % count);
    case ALLTOALL:
      return inputBits(kind, type, seed, static_cast<int>(e / count), rank * count + e % count);
    case SENDRECV:
    default:
      return inputBits(kind, type, seed, (rank + n - 1) % n, e);
  }
}

// Equal bits; for an allreduce of a float type +0 and -0 also match (kernels may sum in any order
// and from any start value).
JMSCCLPP_COLL_HD inline bool matches(int kind, int type, u32 expected, u32 actual) {
  if (expected == actual) {
    return true;
  }
  if (kind != ALLREDUCE || type == INT32) {
    return false;
  }
  u32 magnitude = type == FLOAT32 ? 0x7FFFFFFFu : 0x7FFFu;
  return (expected & magnitude) == 0 && (actual & magnitude) == 0;
}

__device__ inline void store(void* base, int type, i64 e, u32 bits) {
  if (bytesOf(type) == 2) {
    static_cast<unsigned short*>(base)[e] = static_cast<unsigned short>(bits);
  } else {
    static_cast<u32*>(base)[e] = bits;
  }
}

__device__ inline u32 load(const void* base, int type, i64 e) {
  if (bytesOf(type) == 2) {
    return static_cast<const unsigned short*>(base)[e];
  }
  return static_cast<const u32*>(base)[e];
}

__device__ inline i64 firstIndex() {
  return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline i64 stride() {
  return static_cast<i64>(gridDim.x) * blockDim.x;
}

}  // namespace colldata

extern "C" __global__ void collDataInput(void* dst, int kind, int type, int n, int rank, long long count,
                                         unsigned long long seed) {
  long long elements = colldata::inputElements(kind, n, count);
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    colldata::store(dst, type, e, colldata::inputBits(kind, type, seed, rank, e));
  }
}

extern "C" __global__ void collDataPoison(void* out, int type, long long elements) {
  unsigned int bits = colldata::poison(type);
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    colldata::store(out, type, e, bits);
  }
}

extern "C" __global__ void collDataReset(unsigned long long* wrong) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *wrong = 0;
  }
}

extern "C" __global__ void collDataCheck(const void* out, int kind, int type, int n, int rank, long long count,
                                         unsigned long long seed, unsigned long long* wrong) {
  long long elements = colldata::outputElements(kind, n, count);
  unsigned long long mine = 0;
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    unsigned int expected = colldata::expectedBits(kind, type, seed, n, rank, count, e);
    if (!colldata::matches(kind, type, expected, colldata::load(out, type, e))) {
      mine++;
    }
  }
  if (mine != 0) {
    atomicAdd(wrong, mine);
  }
}
