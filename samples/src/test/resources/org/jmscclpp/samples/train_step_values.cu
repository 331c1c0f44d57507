// Runs train_step.cu's value functions on the CPU (they are __host__ __device__) for
// TrainStepKernelsTest: for each line "RANK STEP BUCKET INDEX PASSES WEIGHT GRADIENT" on stdin
// (WEIGHT and GRADIENT as float bits in hex), prints "MIX GRADIENT UPDATED" in hex: mixIndex,
// the bits of gradientValue, and the bits of sgdValue(WEIGHT, GRADIENT, 1/16).
#include <cmath>
#include <cstdio>
#include <cstring>
#include "train_step.cu"

static unsigned int bitsOf(float f) {
  unsigned int u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static float floatOf(unsigned int u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

int main() {
  int rank, step, bucket, passes;
  unsigned long long index;
  unsigned int weight, gradient;
  while (scanf("%d %d %d %llu %d %x %x", &rank, &step, &bucket, &index, &passes, &weight, &gradient) == 7) {
    printf("%08x %08x %08x\n", trainstep::mixIndex(index, bucket, step),
           bitsOf(trainstep::gradientValue(rank, step, bucket, index, passes)),
           bitsOf(trainstep::sgdValue(floatOf(weight), floatOf(gradient), 0.0625f)));
  }
  return 0;
}
