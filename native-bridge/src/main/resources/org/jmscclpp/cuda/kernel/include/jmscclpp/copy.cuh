// jmscclpp device API: the copy that MemoryChannelDeviceHandle's put and get spread over a group
// of threads (MSCCL++'s copy_device.hpp). Any addresses and any byte count, as
// org.jmscclpp.core.channel.MemoryChannel.DeviceHandle#put accepts: the widest access that both ends allow.
#ifndef JMSCCLPP_COPY_CUH_
#define JMSCCLPP_COPY_CUH_

#include "jmscclpp/atomics.cuh"

namespace jmscclpp {

namespace detail {

// Bytes [begin, end) one at a time, spread over the group.
__forceinline__ __device__ void copyBytes(char* dst, const char* src, u64 begin, u64 end, u32 threadId,
                                          u32 numThreads) {
  for (u64 i = begin + threadId; i < end; i += numThreads) {
    dst[i] = src[i];
  }
}

// A copy in elements of type Word (1, 2, 4, 8 or 16 bytes) where dst and src are equally
// misaligned for Word: bytes up to dst's first Word boundary, then whole Words, then the tail
// bytes. Element i goes to thread i mod numThreads, so a warp's accesses are contiguous.
template <typename Word>
__forceinline__ __device__ void copyAs(char* dst, const char* src, u64 bytes, u32 threadId, u32 numThreads) {
  constexpr u64 width = sizeof(Word);
  u64 misalignment = reinterpret_cast<unsigned long long>(dst) & (width - 1);
  u64 head = misalignment == 0 ? 0 : width - misalignment;
  if (head > bytes) {
    head = bytes;
  }
  u64 words = (bytes - head) / width;
  u64 bodyEnd = head + words * width;
  copyBytes(dst, src, 0, head, threadId, numThreads);
  Word* to = reinterpret_cast<Word*>(dst + head);
  const Word* from = reinterpret_cast<const Word*>(src + head);
  for (u64 i = threadId; i < words; i += numThreads) {
    to[i] = from[i];
  }
  copyBytes(dst, src, bodyEnd, bytes, threadId, numThreads);
}

}  // namespace detail

// Copies `bytes` from `src` to `dst` (ranges that do not overlap), as thread `threadId` of a group
// of `numThreads` threads that all call it with the same arguments and together copy the whole
// range. 16-byte accesses when dst and src share their address modulo 16, narrower ones
// otherwise. Plain loads and stores: nothing is ordered with the other threads or with the peer;
// a __syncthreads and a release signal (or a flag) must follow before anyone relies on the data.
__forceinline__ __device__ void copy(void* dst, const void* src, u64 bytes, u32 threadId, u32 numThreads) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  u64 relative = reinterpret_cast<unsigned long long>(d) ^ reinterpret_cast<unsigned long long>(s);
  if ((relative & 15) == 0) {
    detail::copyAs<uint4>(d, s, bytes, threadId, numThreads);
  } else if ((relative & 7) == 0) {
    detail::copyAs<u64>(d, s, bytes, threadId, numThreads);
  } else if ((relative & 3) == 0) {
    detail::copyAs<u32>(d, s, bytes, threadId, numThreads);
  } else if ((relative & 1) == 0) {
    detail::copyAs<unsigned short>(d, s, bytes, threadId, numThreads);
  } else {
    detail::copyBytes(d, s, 0, bytes, threadId, numThreads);
  }
}

}  // namespace jmscclpp

#endif  // JMSCCLPP_COPY_CUH_
