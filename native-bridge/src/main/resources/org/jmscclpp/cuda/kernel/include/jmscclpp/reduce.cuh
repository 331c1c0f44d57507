// jmscclpp device API: element-wise reductions of NCCL's twelve data types under its five ops, bit
// for bit what org.jmscclpp.core.collective.Reductions computes on the host. That class's comment
// defines every corner case (the bits of NaNs, signed zeros, integer averages, fp8 saturation);
// this header implements the same algorithms:
//   - fp8 and bf16 conversions in integer arithmetic, on the host and on the device alike;
//   - fp16 conversions in integer arithmetic on the host and with PTX cvt on the device (exact for
//     every value but NaN, and NaNs are handled in integers on both sides);
//   - fp32 and fp64 arithmetic through explicit round-to-nearest PTX on the device, so that nvcc
//     neither contracts it into fused multiply-adds nor flushes subnormals, whatever -fmad, -ftz
//     or --use_fast_math say; floating comparisons on integer keys, for the same reason.
// Every function is __host__ __device__: ReduceHeaderCrossCheckTest compiles this header as host
// code and compares it with Reductions element by element.
//
// Element bits travel as u32 (types of 1 to 4 bytes, zero-extended) or u64 (8-byte types).
// Reducer<T, Op> folds one element per rank: init with rank 0's, add the others' in rank order,
// then result(nRanks). Vec4Reducer, Vec8Reducer and Vec16Reducer do the same for the elements
// packed little-endian in a u32, a uint2 (an LL16Packet's payload) or a uint4.
#ifndef JMSCCLPP_REDUCE_CUH_
#define JMSCCLPP_REDUCE_CUH_

#include "jmscclpp/atomics.cuh"

// Unrolls a loop over the lanes of a packed reducer on the device, where its lanes must live in
// registers; host compilers do not know the pragma (and warn about it with -Wall).
#ifdef __CUDA_ARCH__
#define JMSCCLPP_UNROLL _Pragma("unroll")
#else
#define JMSCCLPP_UNROLL
#endif

namespace jmscclpp {

// ncclDataType_t: the codes of org.jmscclpp.core.collective.DataType
constexpr int DataTypeInt8 = 0;
constexpr int DataTypeUint8 = 1;
constexpr int DataTypeInt32 = 2;
constexpr int DataTypeUint32 = 3;
constexpr int DataTypeInt64 = 4;
constexpr int DataTypeUint64 = 5;
constexpr int DataTypeFloat16 = 6;
constexpr int DataTypeFloat32 = 7;
constexpr int DataTypeFloat64 = 8;
constexpr int DataTypeBfloat16 = 9;
constexpr int DataTypeFp8E4M3 = 10;
constexpr int DataTypeFp8E5M2 = 11;
constexpr int DataTypeCount = 12;

// ncclRedOp_t: the codes of org.jmscclpp.core.collective.ReduceOp
constexpr int ReduceOpSum = 0;
constexpr int ReduceOpProd = 1;
constexpr int ReduceOpMax = 2;
constexpr int ReduceOpMin = 3;
constexpr int ReduceOpAvg = 4;
constexpr int ReduceOpCount = 5;

// What an element accumulates in: its own width (integers), fp32, or fp64.
constexpr int ElemKindInteger = 0;
constexpr int ElemKindFloat = 1;
constexpr int ElemKindDouble = 2;

namespace detail {

template <bool Condition, typename A, typename B>
struct Conditional {
  typedef A Type;
};

template <typename A, typename B>
struct Conditional<false, A, B> {
  typedef B Type;
};

__forceinline__ __host__ __device__ u32 floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  u32 b;
  __builtin_memcpy(&b, &f, sizeof b);
  return b;
#endif
}

__forceinline__ __host__ __device__ float bitsFloat(u32 b) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(b);
#else
  float f;
  __builtin_memcpy(&f, &b, sizeof f);
  return f;
#endif
}

__forceinline__ __host__ __device__ u64 doubleBits(double d) {
#ifdef __CUDA_ARCH__
  return static_cast<u64>(__double_as_longlong(d));
#else
  u64 b;
  __builtin_memcpy(&b, &d, sizeof b);
  return b;
#endif
}

__forceinline__ __host__ __device__ double bitsDouble(u64 b) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(b));
#else
  double d;
  __builtin_memcpy(&d, &b, sizeof d);
  return d;
#endif
}

// ------------------------------------------------------------------------------------------------
// Conversions between the narrow floating types and fp32 bits: the algorithms of Reductions'
// private fp16ToBits, bitsToFp16, bf16ToBits, bitsToBf16, e4m3ToBits, bitsToE4m3, e5m2ToBits,
// bitsToE5m2 and roundToNarrow

__forceinline__ __host__ __device__ bool isNanF32(u32 b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }

// The code (without sign) of a format with Mant mantissa bits and exponent bias Bias nearest to
// the fp32 magnitude `abs`, ties to even. `abs` is not NaN and below the format's overflow, which
// the callers take care of.
template <int Mant, int Bias>
__forceinline__ __host__ __device__ u32 roundToNarrow(u32 abs) {
  constexpr int shift = 23 - Mant;
  if (abs >= static_cast<u32>(128 - Bias) << 23) {
    // a normal of the format: rebias the exponent and round off the low mantissa bits; a carry
    // runs into the exponent, as it should
    u32 v = abs - (static_cast<u32>(127 - Bias) << 23);
    return (v + ((1u << (shift - 1)) - 1u) + ((v >> shift) & 1u)) >> shift;
  }
  int e = static_cast<int>(abs >> 23);
  if (e == 0) {
    // zero, or an fp32 subnormal: far below half the format's smallest subnormal
    return 0;
  }
  // a subnormal of the format: count units of its smallest subnormal, 2^(1 - Bias - Mant)
  int s = 151 - Bias - Mant - e;
  if (s > 25) {
    return 0;
  }
  u32 m = (abs & 0x7FFFFFu) | 0x800000u;
  return (m + ((1u << (s - 1)) - 1u) + ((m >> s) & 1u)) >> s;
}

// fp16 to fp32, exact; a NaN comes back quiet with its sign and payload.
__forceinline__ __host__ __device__ u32 fp16ToF32(u32 h) {
  if ((h & 0x7FFFu) > 0x7C00u) {
    return (h & 0x8000u) << 16 | 0x7FC00000u | (h & 0x3FFu) << 13;
  }
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
  return floatBits(f);
#else
  u32 sign = (h & 0x8000u) << 16;
  u32 e = (h >> 10) & 0x1Fu;
  u32 m = h & 0x3FFu;
  if (e == 0x1Fu) {
    return sign | 0x7F800000u;
  }
  if (e == 0) {
    // m * 2^-24: exact in fp32
    return sign | floatBits(static_cast<float>(m) * 5.9604644775390625e-8f);
  }
  return sign | (e + 112u) << 23 | m << 13;
#endif
}

// fp32 to fp16, ties to even, infinity from 65520 up; a NaN keeps its sign and top payload bits, quiet.
__forceinline__ __host__ __device__ u32 f32ToFp16(u32 b) {
  u32 abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {
    return (b >> 16 & 0x8000u) | 0x7E00u | (b >> 13 & 0x3FFu);
  }
#ifdef __CUDA_ARCH__
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(bitsFloat(b)));
  return h;
#else
  u32 sign = b >> 16 & 0x8000u;
  if (abs >= 0x477FF000u) {
    return sign | 0x7C00u;
  }
  return sign | roundToNarrow<10, 15>(abs);
#endif
}

__forceinline__ __host__ __device__ u32 bf16ToF32(u32 h) {
  u32 b = h << 16;
  return isNanF32(b) ? b | 0x400000u : b;
}

// Ties to even; the carry of a round-up may run into the exponent (the next binade, or infinity),
// which is why a NaN, whose carry could reach the sign, is handled first.
__forceinline__ __host__ __device__ u32 f32ToBf16(u32 b) {
  if (isNanF32(b)) {
    return (b >> 16) | 0x40u;
  }
  return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
}

__forceinline__ __host__ __device__ u32 e4m3ToF32(u32 c) {
  u32 sign = (c & 0x80u) << 24;
  u32 e = (c >> 3) & 0xFu;
  u32 m = c & 7u;
  if (e == 0xFu && m == 7u) {
    return sign | 0x7FF00000u;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // the hardware's conversion (sm_89 and up), exact for every finite code, through fp16
  unsigned int pair;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(pair) : "h"(static_cast<unsigned short>(c)));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(pair & 0xFFFFu)));
  return floatBits(f);
#else
  if (e == 0) {
    // m * 2^-9: exact in fp32
    return sign | floatBits(static_cast<float>(m) * 0.001953125f);
  }
  return sign | (e + 120u) << 23 | m << 20;
#endif
}

// Saturating: from 448 (0x43E00000) up, infinity included, every magnitude rounds to 448 or to
// beyond it, which satfinite turns into 448.
__forceinline__ __host__ __device__ u32 f32ToE4m3(u32 b) {
  u32 sign = (b >> 24) & 0x80u;
  u32 abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {
    return sign | 0x7Fu;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // the hardware's conversion (sm_89 and up): the same ties-to-even rounding, and satfinite
  // saturates at 448 as the branch below does; the NaN above keeps its sign, as on the host
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(bitsFloat(b)));
  return pair & 0xFFu;
#else
  if (abs >= 0x43E00000u) {
    return sign | 0x7Eu;
  }
  return sign | roundToNarrow<3, 7>(abs);
#endif
}

// e5m2 is the upper byte of an fp16.
__forceinline__ __host__ __device__ u32 e5m2ToF32(u32 c) { return fp16ToF32(c << 8); }

// Saturating at 57344 (0x47600000) as f32ToE4m3 does at 448.
__forceinline__ __host__ __device__ u32 f32ToE5m2(u32 b) {
  u32 sign = (b >> 24) & 0x80u;
  u32 abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {
    return sign | 0x7Fu;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(bitsFloat(b)));
  return pair & 0xFFu;
#else
  if (abs >= 0x47600000u) {
    return sign | 0x7Bu;
  }
  return sign | roundToNarrow<2, 15>(abs);
#endif
}

// ------------------------------------------------------------------------------------------------
// Accumulator arithmetic: one IEEE operation each, rounded to nearest even

template <typename Acc>
struct FloatOps;

template <>
struct FloatOps<float> {
  typedef u32 Bits;
  static constexpr u32 quietBit = 0x400000u;
  static constexpr u32 canonicalNan = 0x7FC00000u;

  static __forceinline__ __host__ __device__ float add(float a, float b) {
#ifdef __CUDA_ARCH__
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a + b;
#endif
  }

  static __forceinline__ __host__ __device__ float mul(float a, float b) {
#ifdef __CUDA_ARCH__
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a * b;
#endif
  }

  static __forceinline__ __host__ __device__ float div(float a, float b) {
#ifdef __CUDA_ARCH__
    float r;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a / b;
#endif
  }

  // exact for any rank count
  static __forceinline__ __host__ __device__ float fromInt(int n) { return static_cast<float>(n); }
  static __forceinline__ __host__ __device__ u32 bits(float f) { return floatBits(f); }
  static __forceinline__ __host__ __device__ bool isNan(u32 b) { return isNanF32(b); }

  // Orders the bits of non-NaN values as the values, -0 and +0 equal: negative values become
  // minus their magnitude.
  static __forceinline__ __host__ __device__ int key(u32 b) {
    int magnitude = static_cast<int>(b & 0x7FFFFFFFu);
    return (b >> 31) != 0 ? -magnitude : magnitude;
  }
};

template <>
struct FloatOps<double> {
  typedef u64 Bits;
  static constexpr u64 quietBit = 0x0008000000000000ULL;
  static constexpr u64 canonicalNan = 0x7FF8000000000000ULL;

  static __forceinline__ __host__ __device__ double add(double a, double b) {
#ifdef __CUDA_ARCH__
    double r;
    asm("add.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
    return r;
#else
    return a + b;
#endif
  }

  static __forceinline__ __host__ __device__ double mul(double a, double b) {
#ifdef __CUDA_ARCH__
    double r;
    asm("mul.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
    return r;
#else
    return a * b;
#endif
  }

  static __forceinline__ __host__ __device__ double div(double a, double b) {
#ifdef __CUDA_ARCH__
    double r;
    asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
    return r;
#else
    return a / b;
#endif
  }

  static __forceinline__ __host__ __device__ double fromInt(int n) { return static_cast<double>(n); }
  static __forceinline__ __host__ __device__ u64 bits(double d) { return doubleBits(d); }
  static __forceinline__ __host__ __device__ bool isNan(u64 b) { return (b & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL; }

  static __forceinline__ __host__ __device__ long long key(u64 b) {
    long long magnitude = static_cast<long long>(b & 0x7FFFFFFFFFFFFFFFULL);
    return (b >> 63) != 0 ? -magnitude : magnitude;
  }
};

// The integer types: Bytes wide, signed or not. Sums and products run in 32 (64) bits, whose
// wrap-around leaves the type's low bits what the type's own would be; results are masked.
template <int Bytes, bool Signed>
struct IntegerElem {
  static constexpr int bytes = Bytes;
  static constexpr int bits = 8 * Bytes;
  static constexpr int kind = ElemKindInteger;
  typedef typename Conditional<Bytes == 8, u64, u32>::Type Bits;
  typedef Bits Acc;
  typedef typename Conditional<Bytes == 8, long long, int>::Type Value;
  static constexpr Bits mask = Bytes == 8 ? ~0ULL : (1ULL << (8 * (Bytes % 8))) - 1;

  static __forceinline__ __host__ __device__ Acc toAcc(Bits x) { return x; }
  static __forceinline__ __host__ __device__ Bits fromAcc(Acc a) { return a & mask; }

  // the element's value, sign-extended when the type is signed
  static __forceinline__ __host__ __device__ Value value(Bits x) {
    if constexpr (!Signed) {
      return static_cast<Value>(x & mask);
    } else if constexpr (Bytes == 1) {
      return static_cast<int>((x & 0xFFu) ^ 0x80u) - 0x80;
    } else {
      return static_cast<Value>(x);
    }
  }

  static __forceinline__ __host__ __device__ bool less(Bits a, Bits b) {
    if constexpr (Signed) {
      return value(a) < value(b);
    } else {
      return (a & mask) < (b & mask);
    }
  }

  // AVG: the wrapped sum divided by the rank count, truncating toward zero when signed
  static __forceinline__ __host__ __device__ Bits average(Acc sum, int nRanks) {
    if constexpr (Signed) {
      return static_cast<Bits>(value(sum) / nRanks) & mask;
    } else {
      return (sum & mask) / static_cast<Bits>(nRanks);
    }
  }
};

// The floating types with an fp32 accumulator; Derived gives toAccBits and fromAccBits.
template <typename Derived, int Bytes>
struct Fp32Elem {
  static constexpr int bytes = Bytes;
  static constexpr int bits = 8 * Bytes;
  static constexpr int kind = ElemKindFloat;
  typedef u32 Bits;
  typedef float Acc;

  static __forceinline__ __host__ __device__ Acc toAcc(Bits x) { return bitsFloat(Derived::toAccBits(x)); }
  static __forceinline__ __host__ __device__ Bits fromAcc(Acc a) { return Derived::fromAccBits(floatBits(a)); }
};

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Elements: width, accumulator, and the conversions to and from it

// Elem<T>: bytes and bits of an element of type T; kind (ElemKind...); Bits (u32 or u64, the
// element zero-extended); Acc (what it accumulates in); toAcc(Bits) and fromAcc(Acc), exact one way
// and rounding once the other. The floating types add toAccBits and fromAccBits, the same on the
// accumulator's raw bits, through which NaN payloads travel.
template <int T>
struct Elem;

template <>
struct Elem<DataTypeInt8> : detail::IntegerElem<1, true> {};
template <>
struct Elem<DataTypeUint8> : detail::IntegerElem<1, false> {};
template <>
struct Elem<DataTypeInt32> : detail::IntegerElem<4, true> {};
template <>
struct Elem<DataTypeUint32> : detail::IntegerElem<4, false> {};
template <>
struct Elem<DataTypeInt64> : detail::IntegerElem<8, true> {};
template <>
struct Elem<DataTypeUint64> : detail::IntegerElem<8, false> {};

template <>
struct Elem<DataTypeFloat16> : detail::Fp32Elem<Elem<DataTypeFloat16>, 2> {
  static __forceinline__ __host__ __device__ u32 toAccBits(u32 x) { return detail::fp16ToF32(x); }
  static __forceinline__ __host__ __device__ u32 fromAccBits(u32 f) { return detail::f32ToFp16(f); }
};

template <>
struct Elem<DataTypeBfloat16> : detail::Fp32Elem<Elem<DataTypeBfloat16>, 2> {
  static __forceinline__ __host__ __device__ u32 toAccBits(u32 x) { return detail::bf16ToF32(x); }
  static __forceinline__ __host__ __device__ u32 fromAccBits(u32 f) { return detail::f32ToBf16(f); }
};

template <>
struct Elem<DataTypeFloat32> : detail::Fp32Elem<Elem<DataTypeFloat32>, 4> {
  static __forceinline__ __host__ __device__ u32 toAccBits(u32 x) { return x; }
  static __forceinline__ __host__ __device__ u32 fromAccBits(u32 f) { return f; }
};

template <>
struct Elem<DataTypeFp8E4M3> : detail::Fp32Elem<Elem<DataTypeFp8E4M3>, 1> {
  static __forceinline__ __host__ __device__ u32 toAccBits(u32 x) { return detail::e4m3ToF32(x); }
  static __forceinline__ __host__ __device__ u32 fromAccBits(u32 f) { return detail::f32ToE4m3(f); }
};

template <>
struct Elem<DataTypeFp8E5M2> : detail::Fp32Elem<Elem<DataTypeFp8E5M2>, 1> {
  static __forceinline__ __host__ __device__ u32 toAccBits(u32 x) { return detail::e5m2ToF32(x); }
  static __forceinline__ __host__ __device__ u32 fromAccBits(u32 f) { return detail::f32ToE5m2(f); }
};

template <>
struct Elem<DataTypeFloat64> {
  static constexpr int bytes = 8;
  static constexpr int bits = 64;
  static constexpr int kind = ElemKindDouble;
  typedef u64 Bits;
  typedef double Acc;

  static __forceinline__ __host__ __device__ u64 toAccBits(u64 x) { return x; }
  static __forceinline__ __host__ __device__ u64 fromAccBits(u64 f) { return f; }
  static __forceinline__ __host__ __device__ Acc toAcc(Bits x) { return detail::bitsDouble(x); }
  static __forceinline__ __host__ __device__ Bits fromAcc(Acc a) { return detail::doubleBits(a); }
};

// ------------------------------------------------------------------------------------------------
// One element per rank

namespace detail {

// SUM, PROD and AVG of a floating type: a NaN result is the canonical NaN, whatever NaN the
// operations made of the inputs' (hardware differs on it).
template <int T, int Op>
struct ArithmeticReducer {
  typedef Elem<T> E;
  typedef typename E::Bits Bits;
  typedef typename E::Acc Acc;
  typedef FloatOps<Acc> F;
  Acc acc;

  __forceinline__ __host__ __device__ void init(Bits x) { acc = E::toAcc(x); }

  __forceinline__ __host__ __device__ void add(Bits x) {
    if constexpr (Op == ReduceOpProd) {
      acc = F::mul(acc, E::toAcc(x));
    } else {
      acc = F::add(acc, E::toAcc(x));
    }
  }

  __forceinline__ __host__ __device__ Bits result(int nRanks) const {
    Acc r = acc;
    if constexpr (Op == ReduceOpAvg) {
      r = F::div(r, F::fromInt(nRanks));
    }
    typename F::Bits b = F::bits(r);
    return E::fromAccBits(F::isNan(b) ? F::canonicalNan : b);
  }
};

// MIN and MAX of a floating type, on the accumulator's bits: the first NaN wins, quieted; equal
// values (-0 and +0 among them) keep the earlier one.
template <int T, int Op>
struct SelectReducer {
  typedef Elem<T> E;
  typedef typename E::Bits Bits;
  typedef FloatOps<typename E::Acc> F;
  typename F::Bits acc;

  __forceinline__ __host__ __device__ void init(Bits x) {
    typename F::Bits v = E::toAccBits(x);
    acc = F::isNan(v) ? v | F::quietBit : v;
  }

  __forceinline__ __host__ __device__ void add(Bits x) {
    typename F::Bits v = E::toAccBits(x);
    bool nan = F::isNan(v);
    bool later = Op == ReduceOpMax ? F::key(v) > F::key(acc) : F::key(v) < F::key(acc);
    if (!F::isNan(acc) && (nan || later)) {
      acc = nan ? v | F::quietBit : v;
    }
  }

  __forceinline__ __host__ __device__ Bits result(int) const { return E::fromAccBits(acc); }
};

}  // namespace detail

// Reducer<T, Op>: one element of type T per rank, folded in rank order. init(rank 0's element bits),
// add(each further rank's, in rank order), then result(nRanks): the element bits of the result
// (nRanks is what AVG divides by; the other ops ignore it).
template <int T, int Op, int Kind = Elem<T>::kind, bool Select = (Op == ReduceOpMin || Op == ReduceOpMax)>
struct Reducer;

template <int T, int Op, bool Select>
struct Reducer<T, Op, ElemKindInteger, Select> {
  typedef Elem<T> E;
  typedef typename E::Bits Bits;
  typename E::Acc acc;

  __forceinline__ __host__ __device__ void init(Bits x) { acc = E::toAcc(x); }

  __forceinline__ __host__ __device__ void add(Bits x) {
    typename E::Acc v = E::toAcc(x);
    if constexpr (Op == ReduceOpProd) {
      acc *= v;
    } else if constexpr (Op == ReduceOpMax) {
      acc = E::less(acc, v) ? v : acc;
    } else if constexpr (Op == ReduceOpMin) {
      acc = E::less(v, acc) ? v : acc;
    } else {
      acc += v;
    }
  }

  __forceinline__ __host__ __device__ Bits result(int nRanks) const {
    if constexpr (Op == ReduceOpAvg) {
      return E::average(acc, nRanks);
    } else {
      return E::fromAcc(acc);
    }
  }
};

template <int T, int Op>
struct Reducer<T, Op, ElemKindFloat, false> : detail::ArithmeticReducer<T, Op> {};
template <int T, int Op>
struct Reducer<T, Op, ElemKindDouble, false> : detail::ArithmeticReducer<T, Op> {};
template <int T, int Op>
struct Reducer<T, Op, ElemKindFloat, true> : detail::SelectReducer<T, Op> {};
template <int T, int Op>
struct Reducer<T, Op, ElemKindDouble, true> : detail::SelectReducer<T, Op> {};

// ------------------------------------------------------------------------------------------------
// Packed elements: a word, an LL16 payload, 16 bytes

namespace detail {

// Element i of type T among the little-endian elements of Words 32-bit words.
template <int T, int Words>
struct Lanes {
  static constexpr int bytes = Elem<T>::bytes;
  static constexpr int count = Words * 4 / bytes;
  typedef typename Elem<T>::Bits Bits;

  static __forceinline__ __host__ __device__ Bits get(const u32 (&w)[Words], int i) {
    if constexpr (bytes == 8) {
      return static_cast<u64>(w[2 * i]) | static_cast<u64>(w[2 * i + 1]) << 32;
    } else if constexpr (bytes == 4) {
      return w[i];
    } else {
      return (w[i * bytes / 4] >> (8 * ((i * bytes) % 4))) & ((1u << (8 * bytes)) - 1u);
    }
  }

  // Into words that start zeroed.
  static __forceinline__ __host__ __device__ void put(u32 (&w)[Words], int i, Bits b) {
    if constexpr (bytes == 8) {
      w[2 * i] = static_cast<u32>(b);
      w[2 * i + 1] = static_cast<u32>(b >> 32);
    } else if constexpr (bytes == 4) {
      w[i] = b;
    } else {
      w[i * bytes / 4] |= b << (8 * ((i * bytes) % 4));
    }
  }
};

// Whether PackReducer keeps 1-byte integers packed: their sums wrap byte by byte, four to a register.
template <int T, int Op>
struct PacksBytes {
  static constexpr bool value = Elem<T>::kind == ElemKindInteger && Elem<T>::bytes == 1 &&
                                (Op == ReduceOpSum || Op == ReduceOpAvg);
};

// A Reducer per element of Words words.
template <int T, int Op, int Words, bool Packed = PacksBytes<T, Op>::value>
struct PackReducer {
  typedef Lanes<T, Words> L;
  Reducer<T, Op> lane[L::count];

  __forceinline__ __host__ __device__ void init(const u32 (&w)[Words]) {
    JMSCCLPP_UNROLL
    for (int i = 0; i < L::count; i++) {
      lane[i].init(L::get(w, i));
    }
  }

  __forceinline__ __host__ __device__ void add(const u32 (&w)[Words]) {
    JMSCCLPP_UNROLL
    for (int i = 0; i < L::count; i++) {
      lane[i].add(L::get(w, i));
    }
  }

  __forceinline__ __host__ __device__ void result(int nRanks, u32 (&w)[Words]) const {
    JMSCCLPP_UNROLL
    for (int i = 0; i < Words; i++) {
      w[i] = 0;
    }
    JMSCCLPP_UNROLL
    for (int i = 0; i < L::count; i++) {
      L::put(w, i, lane[i].result(nRanks));
    }
  }
};

// 1-byte integer sums four to a word: adding the low seven bits of each byte cannot carry into
// the next byte, and the top bit is their carry-less sum, so each byte wraps on its own.
template <int T, int Op, int Words>
struct PackReducer<T, Op, Words, true> {
  u32 acc[Words];

  __forceinline__ __host__ __device__ void init(const u32 (&w)[Words]) {
    JMSCCLPP_UNROLL
    for (int i = 0; i < Words; i++) {
      acc[i] = w[i];
    }
  }

  __forceinline__ __host__ __device__ void add(const u32 (&w)[Words]) {
    JMSCCLPP_UNROLL
    for (int i = 0; i < Words; i++) {
      acc[i] = ((acc[i] & 0x7F7F7F7Fu) + (w[i] & 0x7F7F7F7Fu)) ^ ((acc[i] ^ w[i]) & 0x80808080u);
    }
  }

  __forceinline__ __host__ __device__ void result(int nRanks, u32 (&w)[Words]) const {
    JMSCCLPP_UNROLL
    for (int i = 0; i < Words; i++) {
      if constexpr (Op == ReduceOpAvg) {
        u32 r = 0;
        JMSCCLPP_UNROLL
        for (int b = 0; b < 4; b++) {
          r |= Elem<T>::average((acc[i] >> (8 * b)) & 0xFFu, nRanks) << (8 * b);
        }
        w[i] = r;
      } else {
        w[i] = acc[i];
      }
    }
  }
};

}  // namespace detail

// The elements of type T (at most 4 bytes) packed in a 32-bit word, one word per rank.
template <int T, int Op>
struct Vec4Reducer {
  static_assert(Elem<T>::bytes <= 4, "a 32-bit word holds no 8-byte element");
  detail::PackReducer<T, Op, 1> pack;

  __forceinline__ __host__ __device__ void init(u32 v) {
    u32 w[1] = {v};
    pack.init(w);
  }

  __forceinline__ __host__ __device__ void add(u32 v) {
    u32 w[1] = {v};
    pack.add(w);
  }

  __forceinline__ __host__ __device__ u32 result(int nRanks) const {
    u32 w[1];
    pack.result(nRanks, w);
    return w[0];
  }
};

// The elements of type T packed in 8 bytes (x the low word), one uint2 per rank: an LL16Packet's payload.
template <int T, int Op>
struct Vec8Reducer {
  detail::PackReducer<T, Op, 2> pack;

  __forceinline__ __host__ __device__ void init(uint2 v) {
    u32 w[2] = {v.x, v.y};
    pack.init(w);
  }

  __forceinline__ __host__ __device__ void add(uint2 v) {
    u32 w[2] = {v.x, v.y};
    pack.add(w);
  }

  __forceinline__ __host__ __device__ uint2 result(int nRanks) const {
    u32 w[2];
    pack.result(nRanks, w);
    uint2 r;
    r.x = w[0];
    r.y = w[1];
    return r;
  }
};

// The elements of type T packed in 16 bytes (x the lowest word), one uint4 per rank: 16 fp8, 8 fp16
// or bf16, 4 fp32 or 2 fp64 elements, for instance.
template <int T, int Op>
struct Vec16Reducer {
  detail::PackReducer<T, Op, 4> pack;

  __forceinline__ __host__ __device__ void init(uint4 v) {
    u32 w[4] = {v.x, v.y, v.z, v.w};
    pack.init(w);
  }

  __forceinline__ __host__ __device__ void add(uint4 v) {
    u32 w[4] = {v.x, v.y, v.z, v.w};
    pack.add(w);
  }

  __forceinline__ __host__ __device__ uint4 result(int nRanks) const {
    u32 w[4];
    pack.result(nRanks, w);
    uint4 r;
    r.x = w[0];
    r.y = w[1];
    r.z = w[2];
    r.w = w[3];
    return r;
  }
};

}  // namespace jmscclpp

#endif  // JMSCCLPP_REDUCE_CUH_
