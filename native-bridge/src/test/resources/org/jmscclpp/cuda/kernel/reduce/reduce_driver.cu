// Host driver of ReduceHeaderCrossCheckTest: jmscclpp/reduce.cuh compiled as host code, reducing
// and converting element bits that the test wrote, so that the test can compare every result with
// org.jmscclpp.core.collective.Reductions bit for bit.
//
//   reduce_driver <input> <output>
//
// The input is a sequence of records; every field and element is little-endian, every field a
// u32. The output holds each record's results, in record order.
//
//   reduce: 1, type, op, nRanks, count, then the elements of rank 0, rank 1, ... (count each,
//           packed; count * element size a multiple of 16)
//           -> the count results four times (three for 8-byte types): by Reducer, element by
//              element; by Vec4Reducer, word by word (types of at most 4 bytes only); by
//              Vec8Reducer, uint2 by uint2; by Vec16Reducer, uint4 by uint4
//   encode: 2, type, count, then count fp32 bit patterns -> count u32: Elem<type>::fromAccBits
//   decode: 3, type, count, then count element codes as u32 -> count u32: Elem<type>::toAccBits
//           (encode and decode: the floating types of at most 4 bytes)
//
// Exits 0 after the last record, 2 on a malformed input with a message on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "jmscclpp/jmscclpp.cuh"

using namespace jmscclpp;

namespace {

struct Input {
  std::vector<unsigned char> bytes;
  size_t at = 0;

  u32 field() {
    if (at + 4 > bytes.size()) {
      std::fprintf(stderr, "input ends inside a record, at byte %zu\n", at);
      std::exit(2);
    }
    u32 v;
    std::memcpy(&v, &bytes[at], 4);
    at += 4;
    return v;
  }

  const unsigned char* take(size_t n) {
    if (at + n > bytes.size()) {
      std::fprintf(stderr, "input ends inside a record's %zu bytes of data, at byte %zu\n", n, at);
      std::exit(2);
    }
    const unsigned char* p = &bytes[at];
    at += n;
    return p;
  }
};

std::vector<unsigned char> output;

void emit(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  output.insert(output.end(), b, b + n);
}

template <typename W>
W load(const unsigned char* p) {
  W w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

template <int T, int Op>
void reduce(Input& in, int nRanks, u32 count) {
  constexpr int size = Elem<T>::bytes;
  typedef typename Elem<T>::Bits Bits;
  size_t bytes = static_cast<size_t>(count) * size;
  if (bytes % 16 != 0) {
    std::fprintf(stderr, "%u elements of type %d are not a multiple of 16 bytes\n", count, T);
    std::exit(2);
  }
  std::vector<const unsigned char*> rank(nRanks);
  for (int r = 0; r < nRanks; r++) {
    rank[r] = in.take(bytes);
  }
  for (size_t i = 0; i < count; i++) {
    Reducer<T, Op> reducer;
    Bits x = 0;
    std::memcpy(&x, rank[0] + i * size, size);
    reducer.init(x);
    for (int r = 1; r < nRanks; r++) {
      x = 0;
      std::memcpy(&x, rank[r] + i * size, size);
      reducer.add(x);
    }
    Bits y = reducer.result(nRanks);
    emit(&y, size);
  }
  if constexpr (size <= 4) {
    for (size_t at = 0; at < bytes; at += 4) {
      Vec4Reducer<T, Op> reducer;
      reducer.init(load<u32>(rank[0] + at));
      for (int r = 1; r < nRanks; r++) {
        reducer.add(load<u32>(rank[r] + at));
      }
      u32 y = reducer.result(nRanks);
      emit(&y, 4);
    }
  }
  for (size_t at = 0; at < bytes; at += 8) {
    Vec8Reducer<T, Op> reducer;
    reducer.init(load<uint2>(rank[0] + at));
    for (int r = 1; r < nRanks; r++) {
      reducer.add(load<uint2>(rank[r] + at));
    }
    uint2 y = reducer.result(nRanks);
    emit(&y, 8);
  }
  for (size_t at = 0; at < bytes; at += 16) {
    Vec16Reducer<T, Op> reducer;
    reducer.init(load<uint4>(rank[0] + at));
    for (int r = 1; r < nRanks; r++) {
      reducer.add(load<uint4>(rank[r] + at));
    }
    uint4 y = reducer.result(nRanks);
    emit(&y, 16);
  }
}

template <int T>
void reduceType(Input& in, int op, int nRanks, u32 count) {
  switch (op) {
    case ReduceOpSum: reduce<T, ReduceOpSum>(in, nRanks, count); break;
    case ReduceOpProd: reduce<T, ReduceOpProd>(in, nRanks, count); break;
    case ReduceOpMax: reduce<T, ReduceOpMax>(in, nRanks, count); break;
    case ReduceOpMin: reduce<T, ReduceOpMin>(in, nRanks, count); break;
    case ReduceOpAvg: reduce<T, ReduceOpAvg>(in, nRanks, count); break;
    default:
      std::fprintf(stderr, "no op %d\n", op);
      std::exit(2);
  }
}

template <int T>
void convert(Input& in, bool encode, u32 count) {
  for (u32 i = 0; i < count; i++) {
    u32 x = in.field();
    u32 y = encode ? Elem<T>::fromAccBits(x) : Elem<T>::toAccBits(x);
    emit(&y, 4);
  }
}

void convertType(Input& in, bool encode, int type, u32 count) {
  switch (type) {
    case DataTypeFloat16: convert<DataTypeFloat16>(in, encode, count); break;
    case DataTypeFloat32: convert<DataTypeFloat32>(in, encode, count); break;
    case DataTypeBfloat16: convert<DataTypeBfloat16>(in, encode, count); break;
    case DataTypeFp8E4M3: convert<DataTypeFp8E4M3>(in, encode, count); break;
    case DataTypeFp8E5M2: convert<DataTypeFp8E5M2>(in, encode, count); break;
    default:
      std::fprintf(stderr, "type %d has no fp32 accumulator to convert to or from\n", type);
      std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <input> <output>\n", argv[0]);
    return 2;
  }
  Input in;
  FILE* f = std::fopen(argv[1], "rb");
  if (f == nullptr) {
    std::perror(argv[1]);
    return 2;
  }
  unsigned char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
    in.bytes.insert(in.bytes.end(), buffer, buffer + n);
  }
  std::fclose(f);
  while (in.at < in.bytes.size()) {
    u32 kind = in.field();
    if (kind == 1) {
      int type = static_cast<int>(in.field());
      int op = static_cast<int>(in.field());
      int nRanks = static_cast<int>(in.field());
      u32 count = in.field();
      if (nRanks < 1 || nRanks > 64) {
        std::fprintf(stderr, "%d ranks: 1 to 64\n", nRanks);
        return 2;
      }
      switch (type) {
        case DataTypeInt8: reduceType<DataTypeInt8>(in, op, nRanks, count); break;
        case DataTypeUint8: reduceType<DataTypeUint8>(in, op, nRanks, count); break;
        case DataTypeInt32: reduceType<DataTypeInt32>(in, op, nRanks, count); break;
        case DataTypeUint32: reduceType<DataTypeUint32>(in, op, nRanks, count); break;
        case DataTypeInt64: reduceType<DataTypeInt64>(in, op, nRanks, count); break;
        case DataTypeUint64: reduceType<DataTypeUint64>(in, op, nRanks, count); break;
        case DataTypeFloat16: reduceType<DataTypeFloat16>(in, op, nRanks, count); break;
        case DataTypeFloat32: reduceType<DataTypeFloat32>(in, op, nRanks, count); break;
        case DataTypeFloat64: reduceType<DataTypeFloat64>(in, op, nRanks, count); break;
        case DataTypeBfloat16: reduceType<DataTypeBfloat16>(in, op, nRanks, count); break;
        case DataTypeFp8E4M3: reduceType<DataTypeFp8E4M3>(in, op, nRanks, count); break;
        case DataTypeFp8E5M2: reduceType<DataTypeFp8E5M2>(in, op, nRanks, count); break;
        default:
          std::fprintf(stderr, "no type %d\n", type);
          return 2;
      }
    } else if (kind == 2 || kind == 3) {
      int type = static_cast<int>(in.field());
      u32 count = in.field();
      convertType(in, kind == 2, type, count);
    } else {
      std::fprintf(stderr, "no record kind %u at byte %zu\n", kind, in.at - 4);
      return 2;
    }
  }
  FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr || std::fwrite(output.data(), 1, output.size(), out) != output.size() || std::fclose(out) != 0) {
    std::perror(argv[2]);
    return 2;
  }
  return 0;
}
