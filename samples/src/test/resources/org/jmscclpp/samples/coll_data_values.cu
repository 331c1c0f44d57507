// Runs coll_data.cu's value functions on the CPU (they are __host__ __device__) for
// CollectiveValuesTest: for each line "KIND TYPE OP N RANK ROOT COUNT SEED INDEX" on stdin (OP -1
// for the kinds that move data), this rank's input bits at INDEX and the expected output bits at
// INDEX ("v INPUT EXPECTED", 16 hex digits each). Every (type, op) instantiation of the expected
// value is compiled, as the kernels' modules compile one each.
#include <cstdio>
#include "coll_data.cu"

namespace {

typedef unsigned long long u64;

template <int T>
u64 expectedFor(int kind, int op, int n, int rank, int root, long long count, u64 seed, long long e) {
  switch (op) {
    case jmscclpp::ReduceOpSum:
      return colldata::expectedBits<T, jmscclpp::ReduceOpSum>(kind, n, rank, root, count, seed, e);
    case jmscclpp::ReduceOpProd:
      return colldata::expectedBits<T, jmscclpp::ReduceOpProd>(kind, n, rank, root, count, seed, e);
    case jmscclpp::ReduceOpMax:
      return colldata::expectedBits<T, jmscclpp::ReduceOpMax>(kind, n, rank, root, count, seed, e);
    case jmscclpp::ReduceOpMin:
      return colldata::expectedBits<T, jmscclpp::ReduceOpMin>(kind, n, rank, root, count, seed, e);
    case jmscclpp::ReduceOpAvg:
      return colldata::expectedBits<T, jmscclpp::ReduceOpAvg>(kind, n, rank, root, count, seed, e);
    default:
      return colldata::movedBits<T>(kind, n, rank, root, count, seed, e);
  }
}

u64 expected(int type, int kind, int op, int n, int rank, int root, long long count, u64 seed, long long e) {
  switch (type) {
    case 0: return expectedFor<0>(kind, op, n, rank, root, count, seed, e);
    case 1: return expectedFor<1>(kind, op, n, rank, root, count, seed, e);
    case 2: return expectedFor<2>(kind, op, n, rank, root, count, seed, e);
    case 3: return expectedFor<3>(kind, op, n, rank, root, count, seed, e);
    case 4: return expectedFor<4>(kind, op, n, rank, root, count, seed, e);
    case 5: return expectedFor<5>(kind, op, n, rank, root, count, seed, e);
    case 6: return expectedFor<6>(kind, op, n, rank, root, count, seed, e);
    case 7: return expectedFor<7>(kind, op, n, rank, root, count, seed, e);
    case 8: return expectedFor<8>(kind, op, n, rank, root, count, seed, e);
    case 9: return expectedFor<9>(kind, op, n, rank, root, count, seed, e);
    case 10: return expectedFor<10>(kind, op, n, rank, root, count, seed, e);
    default: return expectedFor<11>(kind, op, n, rank, root, count, seed, e);
  }
}

}  // namespace

int main() {
  int kind, type, op, n, rank, root;
  long long count, index;
  unsigned long long seed;
  while (scanf("%d %d %d %d %d %d %lld %llu %lld", &kind, &type, &op, &n, &rank, &root, &count, &seed, &index) == 9) {
    printf("v %016llx %016llx\n", colldata::inputBits(kind, type, op, n, seed, rank, index),
           expected(type, kind, op, n, rank, root, count, seed, index));
  }
  return 0;
}
