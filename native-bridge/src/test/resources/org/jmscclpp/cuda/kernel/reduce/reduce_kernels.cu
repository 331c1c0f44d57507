// Compile-only coverage of jmscclpp/reduce.cuh on the GPU: one kernel that instantiates Reducer,
// Vec4Reducer, Vec8Reducer and Vec16Reducer for every data type and op, which
// ReduceHeaderCrossCheckTest compiles with nvcc -arch=sm_90 and, where it loads, with NVRTC (so
// this file, like the headers, includes nothing else). Never launched.
#include "jmscclpp/jmscclpp.cuh"

namespace reduce_kernels {

using namespace jmscclpp;

// Rank r's data at in[r]; (type, op)'s four results at out[4 * (type * ReduceOpCount + op) ...].
template <int T, int Op>
__device__ void exercise(const uint4* in, uint4* out, int nRanks) {
  uint4* to = out + 4 * (T * ReduceOpCount + Op);
  Vec16Reducer<T, Op> v16;
  Vec8Reducer<T, Op> v8;
  Reducer<T, Op> one;
  v16.init(in[0]);
  v8.init(make_uint2(in[0].x, in[0].y));
  one.init(static_cast<typename Elem<T>::Bits>(in[0].z));
  for (int r = 1; r < nRanks; r++) {
    v16.add(in[r]);
    v8.add(make_uint2(in[r].x, in[r].y));
    one.add(static_cast<typename Elem<T>::Bits>(in[r].z));
  }
  to[0] = v16.result(nRanks);
  uint2 r8 = v8.result(nRanks);
  to[1] = make_uint4(r8.x, r8.y, 0, 0);
  to[2] = make_uint4(static_cast<u32>(one.result(nRanks)), 0, 0, 0);
  if constexpr (Elem<T>::bytes <= 4) {
    Vec4Reducer<T, Op> v4;
    v4.init(in[0].w);
    for (int r = 1; r < nRanks; r++) {
      v4.add(in[r].w);
    }
    to[3] = make_uint4(v4.result(nRanks), 0, 0, 0);
  }
}

template <int T, int Op>
struct EveryOp {
  static __device__ void run(const uint4* in, uint4* out, int nRanks) {
    exercise<T, Op>(in, out, nRanks);
    EveryOp<T, Op + 1>::run(in, out, nRanks);
  }
};

template <int T>
struct EveryOp<T, ReduceOpCount> {
  static __device__ void run(const uint4*, uint4*, int) {}
};

template <int T>
struct EveryType {
  static __device__ void run(const uint4* in, uint4* out, int nRanks) {
    EveryOp<T, 0>::run(in, out, nRanks);
    EveryType<T + 1>::run(in, out, nRanks);
  }
};

template <>
struct EveryType<DataTypeCount> {
  static __device__ void run(const uint4*, uint4*, int) {}
};

}  // namespace reduce_kernels

extern "C" __global__ void reduceEveryTypeAndOp(const uint4* in, uint4* out, int nRanks) {
  reduce_kernels::EveryType<0>::run(in, out, nRanks);
}
