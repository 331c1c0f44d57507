// The `train-step` sample's kernels (TrainStepSample): one bucket's gradients, and one bucket's
// SGD update. Both are one thread per element with a grid-stride loop, so any grid covers any
// count and no thread reads or writes past `count`.
//
//   bucketGradients(float* gradients, u64 count, int rank, int step, int bucket, int passes)
//     gradients[i] = gradientValue(rank, step, bucket, i, passes) for i < count
//   sgdUpdate(float* weights, const float* gradients, u64 count, float lr)
//     weights[i] = fmaf(-lr, gradients[i], weights[i]) for i < count
//
// gradientValue is a small integer, (mixIndex(i, bucket, step) mod 256) + rank + 1, pushed through
// `passes` dependent passes of x = fmaf(x, 3, -2x): each is 3x - 2x = x computed exactly and
// rounded once, so x stays that integer while the passes take real time. Sums of a few such
// integers are exact in fp32, so the reduced gradients, and the weights after the updates (one
// rounding per fmaf), are known to the bit: TrainStepSample computes them in Java (Math.fma is
// IEEE's fma too) and compares every weight. mixIndex (murmur3's 32-bit finalizer of the index,
// bucket and step) makes neighbouring elements differ, so a reduction that lands in the wrong
// place shows. The value functions are __host__ __device__ so that a test compiles them for the
// CPU and compares them with Java's, bit for bit.
namespace trainstep {

using u64 = unsigned long long;

using u32 = unsigned int;

__host__ __device__ inline u32 mixIndex(u64 i, int bucket, int step) {
  u32 x = static_cast<u32>(i) ^ (static_cast<u32>(i >> 32) * 0x85EBCA6Bu) ^ (static_cast<u32>(bucket) * 0x9E3779B9u) ^
          (static_cast<u32>(step) * 0xC2B2AE35u);
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

__host__ __device__ inline float gradientValue(int rank, int step, int bucket, u64 i, int passes) {
  u32 base = mixIndex(i, bucket, step) & 255u;
  float x = static_cast<float>(base + static_cast<u32>(rank) + 1u);
  for (int p = 0; p < passes; p++) {
    x = fmaf(x, 3.0f, -2.0f * x);
  }
  return x;
}

__host__ __device__ inline float sgdValue(float weight, float gradient, float lr) {
  return fmaf(-lr, gradient, weight);
}

}  // namespace trainstep

extern "C" __global__ void bucketGradients(float* gradients, trainstep::u64 count, int rank, int step, int bucket,
                                           int passes) {
  const trainstep::u64 stride = static_cast<trainstep::u64>(gridDim.x) * blockDim.x;
  for (trainstep::u64 i = static_cast<trainstep::u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    gradients[i] = trainstep::gradientValue(rank, step, bucket, i, passes);
  }
}

extern "C" __global__ void sgdUpdate(float* weights, const float* gradients, trainstep::u64 count, float lr) {
  const trainstep::u64 stride = static_cast<trainstep::u64>(gridDim.x) * blockDim.x;
  for (trainstep::u64 i = static_cast<trainstep::u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    weights[i] = trainstep::sgdValue(weights[i], gradients[i], lr);
  }
}
