// jmscclpp device API: direct loads and stores between two GPUs, MSCCL++'s
// MemoryChannelDeviceHandle. The handle has the layout that
// org.jmscclpp.core.channel.MemoryChannel#encodeDeviceHandle writes, and its verbs move the bytes that
// MemoryChannel.DeviceHandle's verbs of the same name move, at the same offsets and in the same
// units:
//   put:           src + originOffset        -> dst + targetOffset            (bytes)
//   get:           dst + targetOffset        -> src + originOffset            (bytes)
//   putPackets:    src + originOffset        -> packets at dst + targetOffset (2 * bytes of packets)
//   unpackPackets: packets at packetBuffer + targetOffset -> src + originOffset
//   read / write:  element `index` of dst, of the element type's size
// dst is the peer's memory mapped here (its packet buffer, for a packet channel); src and the
// packet buffer are this rank's. Nothing is range-checked on the device: Java checks what it
// can when it builds the channel, and an access outside the memories faults the kernel.
//
// Thread groups: each verb with threadId and numThreads is called by every thread of a group
// with the same range, and each does its share, interleaved (element i by thread i mod
// numThreads, so a warp's accesses are contiguous; the Java verbs cut contiguous shares instead,
// which suits CPU caches). The split orders nothing: __syncthreads before one thread signals.
#ifndef JMSCCLPP_MEMORY_CHANNEL_CUH_
#define JMSCCLPP_MEMORY_CHANNEL_CUH_

#include "jmscclpp/atomics.cuh"
#include "jmscclpp/copy.cuh"
#include "jmscclpp/packet.cuh"
#include "jmscclpp/semaphore.cuh"

namespace jmscclpp {

namespace detail {

// Copies n bytes; through unsigned char, which may alias anything. NVRTC has no memcpy, and a
// loop of constant length folds into register moves.
__forceinline__ __device__ void copyObjectBytes(void* to, const void* from, u32 n) {
  unsigned char* t = static_cast<unsigned char*>(to);
  const unsigned char* f = static_cast<const unsigned char*>(from);
#pragma unroll
  for (u32 i = 0; i < n; i++) {
    t[i] = f[i];
  }
}

// A T's bytes as the unsigned integer (or uint4) of the same width, and back: how a value of any
// trivially copyable 1-, 2-, 4-, 8- or 16-byte type passes through the fixed-width registers of
// a single volatile access. Byte copies, not unions, so that types with constructors work too.
template <typename Bits, typename T>
__forceinline__ __device__ Bits toBits(const T& value) {
  Bits bits;
  copyObjectBytes(&bits, &value, sizeof(T));
  return bits;
}

template <typename T, typename Bits>
__forceinline__ __device__ T fromBits(const Bits& bits) {
  alignas(T) unsigned char storage[sizeof(T)];
  copyObjectBytes(storage, &bits, sizeof(T));
  return *reinterpret_cast<const T*>(storage);
}

template <typename T>
__forceinline__ __device__ void checkAccessType() {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
                "read<T> and write<T> take types of 1, 2, 4, 8 or 16 bytes");
  static_assert(alignof(T) == sizeof(T), "read<T> and write<T> take types aligned to their size (one access)");
  static_assert(__is_trivially_copyable(T), "read<T> and write<T> take trivially copyable types");
}

// Volatile load of a T: one access of its width, never merged, cached in a register or hoisted
// out of a loop (MemoryChannel.DeviceHandle's opaque reads).
template <typename T>
__forceinline__ __device__ T loadVolatile(const T* p) {
  checkAccessType<T>();
  if constexpr (sizeof(T) == 1) {
    unsigned short v;
    asm volatile("ld.volatile.global.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return fromBits<T>(static_cast<unsigned char>(v));
  } else if constexpr (sizeof(T) == 2) {
    unsigned short v;
    asm volatile("ld.volatile.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return fromBits<T>(v);
  } else if constexpr (sizeof(T) == 4) {
    u32 v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return fromBits<T>(v);
  } else if constexpr (sizeof(T) == 8) {
    u64 v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return fromBits<T>(v);
  } else {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return fromBits<T>(v);
  }
}

// Volatile store of a T: one access of its width (MemoryChannel.DeviceHandle's opaque writes).
template <typename T>
__forceinline__ __device__ void storeVolatile(T* p, const T& value) {
  checkAccessType<T>();
  if constexpr (sizeof(T) == 1) {
    unsigned short v = toBits<unsigned char>(value);
    asm volatile("st.volatile.global.u8 [%0], %1;" ::"l"(p), "h"(v) : "memory");
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("st.volatile.global.u16 [%0], %1;" ::"l"(p), "h"(toBits<unsigned short>(value)) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(toBits<u32>(value)) : "memory");
  } else if constexpr (sizeof(T) == 8) {
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(toBits<u64>(value)) : "memory");
  } else {
    uint4 v = toBits<uint4>(value);
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
  }
}

}  // namespace detail

// 48 bytes, MemoryChannel#encodeDeviceHandle's order.
struct MemoryChannelDeviceHandle {
  MemoryDevice2DeviceSemaphoreDeviceHandle semaphore;
  void* dst;           // the peer's memory, mapped here
  void* src;           // this rank's memory
  void* packetBuffer;  // this rank's packet buffer, which the peer writes packets into; null if none

  // ---- copies

  // Thread threadId's share of copying `bytes` from src + originOffset to the peer's dst + targetOffset.
  __forceinline__ __device__ void put(u64 targetOffset, u64 originOffset, u64 bytes, u32 threadId, u32 numThreads) {
    copy(static_cast<char*>(dst) + targetOffset, static_cast<const char*>(src) + originOffset, bytes, threadId,
         numThreads);
  }

  // put with the same offset on both sides.
  __forceinline__ __device__ void put(u64 offset, u64 bytes, u32 threadId, u32 numThreads) {
    put(offset, offset, bytes, threadId, numThreads);
  }

  // put by one thread alone.
  __forceinline__ __device__ void put(u64 targetOffset, u64 originOffset, u64 bytes) {
    put(targetOffset, originOffset, bytes, 0, 1);
  }

  __forceinline__ __device__ void put(u64 offset, u64 bytes) { put(offset, offset, bytes, 0, 1); }

  // Thread threadId's share of copying `bytes` from the peer's dst + targetOffset to src + originOffset.
  __forceinline__ __device__ void get(u64 targetOffset, u64 originOffset, u64 bytes, u32 threadId, u32 numThreads) {
    copy(static_cast<char*>(src) + originOffset, static_cast<const char*>(dst) + targetOffset, bytes, threadId,
         numThreads);
  }

  __forceinline__ __device__ void get(u64 offset, u64 bytes, u32 threadId, u32 numThreads) {
    get(offset, offset, bytes, threadId, numThreads);
  }

  __forceinline__ __device__ void get(u64 targetOffset, u64 originOffset, u64 bytes) {
    get(targetOffset, originOffset, bytes, 0, 1);
  }

  __forceinline__ __device__ void get(u64 offset, u64 bytes) { get(offset, offset, bytes, 0, 1); }

  // ---- single values of the peer's memory

  // Loads element `index` of the peer's memory viewed as an array of T (byte offset
  // index * sizeof(T)), with one volatile access.
  template <typename T>
  __forceinline__ __device__ T read(u64 index) const {
    return detail::loadVolatile(static_cast<const T*>(dst) + index);
  }

  // Stores `value` as element `index` of the peer's memory viewed as an array of T, with one
  // volatile access.
  template <typename T>
  __forceinline__ __device__ void write(u64 index, const T& value) {
    detail::storeVolatile(static_cast<T*>(dst) + index, value);
  }

  // ---- packets

  // Thread threadId's share of packing `bytes` of src + originOffset (a multiple of the packet's
  // payload) into Packets with `flag` (not 0) written to the peer's memory at targetOffset
  // (2 * bytes of packets): the peer's unpackPackets with the same flag receives them.
  template <typename Packet = LL16Packet>
  __forceinline__ __device__ void putPackets(u64 targetOffset, u64 originOffset, u64 bytes, u32 threadId,
                                             u32 numThreads, u32 flag) {
    copyToPackets<Packet>(static_cast<char*>(dst) + targetOffset, static_cast<const char*>(src) + originOffset, bytes,
                          threadId, numThreads, flag);
  }

  // Thread threadId's share of waiting for the Packets at this rank's packetBuffer + targetOffset
  // to carry `flag` and unpacking their `bytes` of payload into src + originOffset. Stops the
  // kernel when this thread's packets have not all arrived within `timeoutNs`.
  template <typename Packet = LL16Packet>
  __forceinline__ __device__ void unpackPackets(u64 targetOffset, u64 originOffset, u64 bytes, u32 threadId,
                                                u32 numThreads, u32 flag,
                                                u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    copyFromPackets<Packet>(static_cast<char*>(src) + originOffset,
                            static_cast<const char*>(packetBuffer) + targetOffset, bytes, threadId, numThreads, flag,
                            timeoutNs);
  }

  // unpackPackets that also ends on `abort` (see AbortFlag): true once this thread's packets all
  // arrived; false when the job was aborted or `timeoutNs` passed (which raises the flag).
  template <typename Packet = LL16Packet>
  __forceinline__ __device__ bool unpackPackets(u64 targetOffset, u64 originOffset, u64 bytes, u32 threadId,
                                                u32 numThreads, u32 flag, AbortFlag abort,
                                                u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    return copyFromPackets<Packet>(static_cast<char*>(src) + originOffset,
                                   static_cast<const char*>(packetBuffer) + targetOffset, bytes, threadId, numThreads,
                                   flag, abort, timeoutNs);
  }

  // ---- semaphore

  // Raises the peer's semaphore after this thread's earlier writes (and its block's, up to the
  // last __syncthreads): the peer's wait then sees the data put before.
  __forceinline__ __device__ void signal() { semaphore.signal(); }

  __forceinline__ __device__ void relaxedSignal() { semaphore.relaxedSignal(); }

  // Waits for the peer's next signal (acquire) and consumes it; stops the kernel past `timeoutNs`.
  __forceinline__ __device__ void wait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) { semaphore.wait(timeoutNs); }

  __forceinline__ __device__ void relaxedWait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    semaphore.relaxedWait(timeoutNs);
  }

  // wait that also ends on `abort` (see AbortFlag): true once the peer's signal arrived; false
  // when the job was aborted or `timeoutNs` passed (which raises the flag).
  __forceinline__ __device__ bool wait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    return semaphore.wait(abort, timeoutNs);
  }

  __forceinline__ __device__ bool relaxedWait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    return semaphore.relaxedWait(abort, timeoutNs);
  }

  // Consumes one signal of the peer if one has arrived that was not consumed yet; never waits.
  __forceinline__ __device__ bool poll() { return semaphore.poll(); }
};

static_assert(sizeof(MemoryChannelDeviceHandle) == 48, "MemoryChannel.DEVICE_HANDLE_BYTES");

}  // namespace jmscclpp

#endif  // JMSCCLPP_MEMORY_CHANNEL_CUH_
