// The data every collective run of the samples and of `jmscclpp bench coll` is checked with on the
// CUDA backend (CollectiveData): inputs drawn from a seed, outputs poisoned before a run, every
// output element checked after it, on the GPU. The value functions are __host__ __device__ and
// mirror CollectiveValues.java bit for bit (CollectiveValuesTest compiles them for the CPU with
// nvcc and compares); the expected result of a reduction is jmscclpp::Reducer<T, Op> folding the
// n ranks' inputs in rank order, which is what org.jmscclpp.core.collective.Reductions defines and
// every engine computes.
//
// Compiled per module with these defines prepended (the kernels exist only when they are set):
//   COLLDATA_T   the element type (ncclDataType_t code, 0 to 11)
//   COLLDATA_OP  the reduction (ncclRedOp_t code, 0 to 4) of a reducing kind's module, or -1 for
//                the modules of the kinds that move data
// Codes: kind = CollectiveKind.code() (1 all_reduce, 2 all_gather, 3 reduce_scatter, 4 broadcast,
// 5 reduce, 6 alltoall, 7 sendrecv: a ring of sends to rank + 1); count is the call's count in
// CollectiveKind's sense (per rank for all_gather and reduce_scatter, per peer for alltoall).
// Launch each with any grid (the loops stride over it), except collDataReset: one thread.
//
//   collDataInput(void* dst, long long elements, int kind, int n, int rank, unsigned long long seed)
//       writes this rank's input elements 0 .. elements-1 at dst
//   collDataPoison(void* out, long long elements)
//       writes the poison (all ones) into the first `elements` elements of out
//   collDataReset(unsigned long long* wrong)
//       *wrong = 0
//   collDataCheck(const void* out, long long elements, int kind, int n, int rank, int root,
//                 long long count, unsigned long long seed, unsigned long long* wrong)
//       adds to *wrong the number of out's first `elements` elements that differ from what a
//       correct run leaves on this rank
#include <jmscclpp/reduce.cuh>

#ifndef JMSCCLPP_COLL_HD
#define JMSCCLPP_COLL_HD __host__ __device__
#endif

namespace colldata {

typedef unsigned long long u64;
typedef long long i64;

constexpr int AllReduce = 1;
constexpr int AllGather = 2;
constexpr int ReduceScatter = 3;
constexpr int Broadcast = 4;
constexpr int Reduce = 5;
constexpr int AllToAll = 6;
constexpr int SendRecv = 7;

constexpr u64 GOLDEN = 0x9E3779B97F4A7C15ull;

JMSCCLPP_COLL_HD inline bool reduces(int kind) { return kind == AllReduce || kind == ReduceScatter || kind == Reduce; }

// splitmix64's finalizer
JMSCCLPP_COLL_HD inline u64 mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The 64 random bits of element `index` of rank `rank`'s input in the run of `seed` (rank -1: the
// per-index stream).
JMSCCLPP_COLL_HD inline u64 word(u64 seed, int rank, i64 index) {
  u64 base = mix(seed + GOLDEN * static_cast<u64>(static_cast<i64>(rank) + 1));
  return mix(base + GOLDEN * static_cast<u64>(index + 1));
}

JMSCCLPP_COLL_HD inline int unitExponent(u64 seed, i64 index) { return static_cast<int>(word(seed, -1, index) % 3) - 2; }

JMSCCLPP_COLL_HD constexpr int bytesOf(int type) {
  switch (type) {
    case jmscclpp::DataTypeInt8:
    case jmscclpp::DataTypeUint8:
    case jmscclpp::DataTypeFp8E4M3:
    case jmscclpp::DataTypeFp8E5M2:
      return 1;
    case jmscclpp::DataTypeFloat16:
    case jmscclpp::DataTypeBfloat16:
      return 2;
    case jmscclpp::DataTypeInt64:
    case jmscclpp::DataTypeUint64:
    case jmscclpp::DataTypeFloat64:
      return 8;
    default:
      return 4;
  }
}

JMSCCLPP_COLL_HD inline bool isFloating(int type) { return type >= jmscclpp::DataTypeFloat16; }

// All ones in the type's width: the poison, and the mask of an element's bits.
JMSCCLPP_COLL_HD inline u64 mask(int type) { return bytesOf(type) == 8 ? ~0ull : (1ull << (8 * bytesOf(type))) - 1; }

JMSCCLPP_COLL_HD inline int ceilLog2(int n) {
  int b = 0;
  while ((1 << b) < n) {
    b++;
  }
  return b;
}

JMSCCLPP_COLL_HD inline int significandBits(int type) {
  switch (type) {
    case jmscclpp::DataTypeFp8E4M3:
      return 4;
    case jmscclpp::DataTypeFp8E5M2:
      return 3;
    case jmscclpp::DataTypeFloat16:
      return 11;
    case jmscclpp::DataTypeBfloat16:
      return 8;
    case jmscclpp::DataTypeFloat64:
      return 53;
    default:
      return 24;
  }
}

JMSCCLPP_COLL_HD inline int exponentBias(int type) {
  switch (type) {
    case jmscclpp::DataTypeFp8E4M3:
      return 7;
    case jmscclpp::DataTypeFp8E5M2:
    case jmscclpp::DataTypeFloat16:
      return 15;
    case jmscclpp::DataTypeFloat64:
      return 1023;
    default:
      return 127;
  }
}

JMSCCLPP_COLL_HD inline int powerRange(int type) {
  switch (type) {
    case jmscclpp::DataTypeFp8E4M3:
      return 8;
    case jmscclpp::DataTypeFp8E5M2:
    case jmscclpp::DataTypeFloat16:
      return 15;
    default:
      return 64;
  }
}

// The bits of +-m * 2^e for 1 <= m <= 2^p and a normal result: exact.
JMSCCLPP_COLL_HD inline u64 floatBits(int type, bool negative, u64 m, int e) {
  int mbits = significandBits(type) - 1;
  int width = bytesOf(type) * 8;
  int h = 63;
  while ((m >> h) == 0) {
    h--;
  }
  u64 frac = h <= mbits ? (m << (mbits - h)) & ((1ull << mbits) - 1) : 0;
  u64 biased = static_cast<u64>(static_cast<i64>(h + e + exponentBias(type)));
  u64 sign = negative ? 1ull << (width - 1) : 0;
  return (sign | (biased << mbits) | frac) & mask(type);
}

// Any bits of the type's width but the poison.
JMSCCLPP_COLL_HD inline u64 rawBits(int type, u64 w) {
  u64 b = w & mask(type);
  return b == mask(type) ? (b ^ 1ull) : b;
}

// Element `index` of rank `rank`'s input (see CollectiveValues.inputBits for why these values).
JMSCCLPP_COLL_HD inline u64 inputBits(int kind, int type, int op, int n, u64 seed, int rank, i64 index) {
  u64 w = word(seed, rank, index);
  if (!reduces(kind) || op < 0) {
    return rawBits(type, w);
  }
  if (!isFloating(type)) {
    u64 m = mask(type);
    switch (op) {
      case jmscclpp::ReduceOpSum:
        return w & m & ~1ull;
      case jmscclpp::ReduceOpProd:
        return (w & m & ~3ull) | 1ull;
      case jmscclpp::ReduceOpAvg:
        return w & (m >> (1 + ceilLog2(n)));
      default:
        return rawBits(type, w);
    }
  }
  if (op == jmscclpp::ReduceOpProd) {
    bool negative = (w >> 63) != 0;
    int e = n <= powerRange(type) ? static_cast<int>((w & 0x7FFFFFFFFFFFFFFFull) % 3) - 1 : 0;
    return floatBits(type, negative, 1, e);
  }
  u64 units = (1ull << significandBits(type)) / static_cast<u64>(n);
  if (units == 0) {
    // more ranks than the type has units: only the first 2^p ranks contribute, one unit at most
    if (rank >= (1 << significandBits(type))) {
      return 0;
    }
    units = 1;
  }
  i64 k = static_cast<i64>(w % (2 * units)) - static_cast<i64>(units);
  if (k == 0) {
    return 0;
  }
  return floatBits(type, k < 0, static_cast<u64>(k < 0 ? -k : k), unitExponent(seed, index));
}

// The reduction of element `index` over the n ranks' inputs, in rank order.
template <int T, int Op>
JMSCCLPP_COLL_HD u64 reduced(int kind, int n, u64 seed, i64 index) {
  typedef typename jmscclpp::Elem<T>::Bits Bits;
  jmscclpp::Reducer<T, Op> r;
  r.init(static_cast<Bits>(inputBits(kind, T, Op, n, seed, 0, index)));
  for (int q = 1; q < n; q++) {
    r.add(static_cast<Bits>(inputBits(kind, T, Op, n, seed, q, index)));
  }
  return static_cast<u64>(r.result(n));
}

// What output element e of rank `rank` holds after a correct run (for a rank that gets an output).
template <int T, int Op>
JMSCCLPP_COLL_HD u64 expectedBits(int kind, int n, int rank, int root, i64 count, u64 seed, i64 e) {
  switch (kind) {
    case AllReduce:
    case Reduce:
      return reduced<T, Op>(kind, n, seed, e);
    case ReduceScatter:
      return reduced<T, Op>(kind, n, seed, rank * count + e);
    case Broadcast:
      return inputBits(kind, T, Op, n, seed, root, e);
    case AllGather:
      return inputBits(kind, T, Op, n, seed, static_cast<int>(e / count), e % count);
    case AllToAll:
      return inputBits(kind, T, Op, n, seed, static_cast<int>(e / count), rank * count + e % count);
    case SendRecv:
    default:
      return inputBits(kind, T, Op, n, seed, (rank + n - 1) % n, e);
  }
}

// The module of the kinds that move data reduces nothing: a Reducer for its type is never used.
template <int T>
JMSCCLPP_COLL_HD u64 movedBits(int kind, int n, int rank, int root, i64 count, u64 seed, i64 e) {
  return expectedBits<T, jmscclpp::ReduceOpSum>(kind, n, rank, root, count, seed, e);
}

}  // namespace colldata

#ifdef COLLDATA_T

namespace colldata {

constexpr int W = bytesOf(COLLDATA_T);

__device__ inline void store(void* base, i64 e, u64 bits) {
  switch (W) {
    case 1:
      static_cast<unsigned char*>(base)[e] = static_cast<unsigned char>(bits);
      break;
    case 2:
      static_cast<unsigned short*>(base)[e] = static_cast<unsigned short>(bits);
      break;
    case 4:
      static_cast<unsigned int*>(base)[e] = static_cast<unsigned int>(bits);
      break;
    default:
      static_cast<u64*>(base)[e] = bits;
  }
}

__device__ inline u64 load(const void* base, i64 e) {
  switch (W) {
    case 1:
      return static_cast<const unsigned char*>(base)[e];
    case 2:
      return static_cast<const unsigned short*>(base)[e];
    case 4:
      return static_cast<const unsigned int*>(base)[e];
    default:
      return static_cast<const u64*>(base)[e];
  }
}

__device__ inline i64 firstIndex() { return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; }

__device__ inline i64 stride() { return static_cast<i64>(gridDim.x) * blockDim.x; }

__device__ inline u64 expected(int kind, int n, int rank, int root, i64 count, u64 seed, i64 e) {
#if COLLDATA_OP >= 0
  return expectedBits<COLLDATA_T, COLLDATA_OP>(kind, n, rank, root, count, seed, e);
#else
  return movedBits<COLLDATA_T>(kind, n, rank, root, count, seed, e);
#endif
}

}  // namespace colldata

extern "C" __global__ void collDataInput(void* dst, long long elements, int kind, int n, int rank,
                                         unsigned long long seed) {
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    colldata::store(dst, e, colldata::inputBits(kind, COLLDATA_T, COLLDATA_OP, n, seed, rank, e));
  }
}

extern "C" __global__ void collDataPoison(void* out, long long elements) {
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    colldata::store(out, e, colldata::mask(COLLDATA_T));
  }
}

extern "C" __global__ void collDataReset(unsigned long long* wrong) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *wrong = 0;
  }
}

extern "C" __global__ void collDataCheck(const void* out, long long elements, int kind, int n, int rank, int root,
                                         long long count, unsigned long long seed, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (long long e = colldata::firstIndex(); e < elements; e += colldata::stride()) {
    if (colldata::load(out, e) != colldata::expected(kind, n, rank, root, count, seed, e)) {
      mine++;
    }
  }
  if (mine != 0) {
    atomicAdd(wrong, mine);
  }
}

#endif  // COLLDATA_T
