// Runs coll_data.cu's value functions on the CPU (they are __host__ __device__) for
// CollectiveValuesTest: first every q / 4 for q in [-QUARTERS, QUARTERS] in each float type
// ("q TYPE Q BITS"), then, for each line "KIND TYPE SEED N RANK COUNT INDEX" on stdin, the word,
// the input bits and the expected output bits ("v WORD INPUT EXPECTED", hex).
#include <cstdio>
#include "coll_data.cu"

int main() {
  const long long QUARTERS = 70000;
  const int types[] = {colldata::FLOAT16, colldata::FLOAT32, colldata::BFLOAT16};
  for (int t : types) {
    for (long long q = -QUARTERS; q <= QUARTERS; q++) {
      printf("q %d %lld %08x\n", t, q, colldata::quartersToBits(t, q));
    }
  }
  int kind, type, n, rank;
  unsigned long long seed;
  long long count, index;
  while (scanf("%d %d %llu %d %d %lld %lld", &kind, &type, &seed, &n, &rank, &count, &index) == 7) {
    printf("v %016llx %08x %08x\n", colldata::word(seed, rank, index),
           colldata::inputBits(kind, type, seed, rank, index),
           colldata::expectedBits(kind, type, seed, n, rank, count, index));
  }
  return 0;
}
