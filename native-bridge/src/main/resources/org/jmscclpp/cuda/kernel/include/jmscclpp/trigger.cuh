// jmscclpp device API: the proxy trigger, bit for bit org.jmscclpp.core.proxy.ProxyTrigger (and
// MSCCL++'s ProxyTrigger). The Java class comment holds the diagram:
//
//   fst: bits 0-31 size, 32-63 srcOffset
//   snd: bits 0-31 dstOffset, 32-40 srcMemoryId, 41-49 dstMemoryId, 50-52 type,
//        53-62 semaphoreId, 63 the fifo's commit bit (never part of a trigger)
#ifndef JMSCCLPP_TRIGGER_CUH_
#define JMSCCLPP_TRIGGER_CUH_

#include "jmscclpp/atomics.cuh"

namespace jmscclpp {

// Type bits (ProxyTrigger.DATA, FLAG, SYNC): copy, raise the peer's semaphore, flush.
constexpr u32 TriggerData = 1;
constexpr u32 TriggerFlag = 2;
constexpr u32 TriggerSync = 4;

constexpr u32 TriggerBitsSize = 32;
constexpr u32 TriggerBitsOffset = 32;
constexpr u32 TriggerBitsMemoryId = 9;
constexpr u32 TriggerBitsType = 3;
constexpr u32 TriggerBitsSemaphoreId = 10;

constexpr u32 TriggerSrcMemoryIdShift = 32;
constexpr u32 TriggerDstMemoryIdShift = TriggerSrcMemoryIdShift + TriggerBitsMemoryId;  // 41
constexpr u32 TriggerTypeShift = TriggerDstMemoryIdShift + TriggerBitsMemoryId;         // 50
constexpr u32 TriggerSemaphoreIdShift = TriggerTypeShift + TriggerBitsType;             // 53

// Bit 63 of snd: the fifo's lap parity, set by FifoDeviceHandle::push, cleared by the proxy.
constexpr u64 TriggerCommitBit = 1ULL << 63;

// Largest memory id and semaphore id (ProxyTrigger.MAX_MEMORY_ID, MAX_SEMAPHORE_ID).
constexpr u32 TriggerMaxMemoryId = (1u << TriggerBitsMemoryId) - 1;
constexpr u32 TriggerMaxSemaphoreId = (1u << TriggerBitsSemaphoreId) - 1;

// One request to the proxy: two 64-bit words, 16-byte aligned so that a push writes the slot with
// one 16-byte store.
struct alignas(16) ProxyTrigger {
  u64 fst;
  u64 snd;

  ProxyTrigger() = default;

  // The raw words; bit 63 of snd must be clear (the fifo owns it).
  __forceinline__ __host__ __device__ ProxyTrigger(u64 fst, u64 snd) : fst(fst), snd(snd) {}

  // A trigger from its fields, in MSCCL++'s (and ProxyTrigger.of's) order. Java checks the ranges;
  // here each field is cut to its width, so an out-of-range value cannot spill into its neighbour
  // (and, as with MSCCL++'s bit-fields, arrives truncated).
  __forceinline__ __host__ __device__ ProxyTrigger(u32 type, u32 dstMemoryId, u64 dstOffset, u32 srcMemoryId,
                                                   u64 srcOffset, u64 size, u32 semaphoreId)
      : fst(((srcOffset & 0xFFFFFFFFULL) << TriggerBitsSize) | (size & 0xFFFFFFFFULL)),
        snd((static_cast<u64>(semaphoreId & TriggerMaxSemaphoreId) << TriggerSemaphoreIdShift) |
            (static_cast<u64>(type & 7u) << TriggerTypeShift) |
            (static_cast<u64>(dstMemoryId & TriggerMaxMemoryId) << TriggerDstMemoryIdShift) |
            (static_cast<u64>(srcMemoryId & TriggerMaxMemoryId) << TriggerSrcMemoryIdShift) |
            (dstOffset & 0xFFFFFFFFULL)) {}

  __forceinline__ __host__ __device__ u64 size() const { return fst & 0xFFFFFFFFULL; }
  __forceinline__ __host__ __device__ u64 srcOffset() const { return fst >> TriggerBitsSize; }
  __forceinline__ __host__ __device__ u64 dstOffset() const { return snd & 0xFFFFFFFFULL; }
  __forceinline__ __host__ __device__ u32 srcMemoryId() const {
    return static_cast<u32>(snd >> TriggerSrcMemoryIdShift) & TriggerMaxMemoryId;
  }
  __forceinline__ __host__ __device__ u32 dstMemoryId() const {
    return static_cast<u32>(snd >> TriggerDstMemoryIdShift) & TriggerMaxMemoryId;
  }
  __forceinline__ __host__ __device__ u32 type() const { return static_cast<u32>(snd >> TriggerTypeShift) & 7u; }
  __forceinline__ __host__ __device__ u32 semaphoreId() const {
    return static_cast<u32>(snd >> TriggerSemaphoreIdShift) & TriggerMaxSemaphoreId;
  }
};

static_assert(sizeof(ProxyTrigger) == 16, "a trigger is two 64-bit words (FifoLayout.TRIGGER_BYTES)");
static_assert(alignof(ProxyTrigger) == 16, "a fifo slot is written by one 16-byte store");

}  // namespace jmscclpp

#endif  // JMSCCLPP_TRIGGER_CUH_
