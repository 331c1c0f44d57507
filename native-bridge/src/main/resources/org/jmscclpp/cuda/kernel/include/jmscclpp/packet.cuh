// jmscclpp device API: low-latency packets. LL16Packet has the layout of org.jmscclpp.core.packet.LL16Packet,
// LL8Packet that of org.jmscclpp.core.packet.LL8Packet; copyToPackets and copyFromPackets move payload as
// their Java namesakes (PacketFormat#copyToPackets, #copyFromPackets) do.
//
// A packet carries its own flag next to its data and is written with one store and read with one
// load, so a reader that sees the flag it expects also has the data of the same store: no
// semaphore, no fence. Flag 0 is reserved (a zeroed buffer holds it); senders use round + 1.
// A packet is rewritten only after its reader consumed it, which the protocol above must ensure.
//
// Payload in ordinary memory is read and written with aligned accesses: 8-byte aligned for LL16
// (two 32-bit words), 4-byte aligned for LL8. Packet memory is aligned to the packet size.
#ifndef JMSCCLPP_PACKET_CUH_
#define JMSCCLPP_PACKET_CUH_

#include "jmscclpp/atomics.cuh"

namespace jmscclpp {

// 16 bytes, 8 of payload: {data1, flag1, data2, flag2}. Written with one 16-byte volatile store;
// the two flags guard against a reader that sees the two halves of the store at different times
// (links that move 8 bytes atomically, not 16): it accepts the packet only when both carry the flag.
struct alignas(16) LL16Packet {
  u32 data1;
  u32 flag1;
  u32 data2;
  u32 flag2;

  // The payload type one packet carries: data1 in x, data2 in y.
  typedef uint2 Payload;

  // Writes the packet: data1, data2 and `flag` in both halves, in one store. Volatile rather than
  // release: the flag itself tells the reader the data is there.
  __forceinline__ __device__ void write(u32 d1, u32 d2, u32 flag) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(this), "r"(d1), "r"(flag), "r"(d2),
                 "r"(flag)
                 : "memory");
  }

  __forceinline__ __device__ void write(Payload payload, u32 flag) { write(payload.x, payload.y, flag); }

  // Writes the payload's low 32 bits as data1 and its high 32 bits as data2 (LL16Packet.write(long)).
  __forceinline__ __device__ void write(u64 payload, u32 flag) {
    write(static_cast<u32>(payload), static_cast<u32>(payload >> 32), flag);
  }

  // One look at the packet: true, with the payload in `out`, when both flags equal `flag`.
  __forceinline__ __device__ bool readOnce(u32 flag, Payload& out) const {
    u32 d1, f1, d2, f2;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d1), "=r"(f1), "=r"(d2), "=r"(f2)
                 : "l"(this)
                 : "memory");
    out.x = d1;
    out.y = d2;
    return f1 == flag && f2 == flag;
  }

  // Waits until the packet carries `flag` in both halves and returns its payload. Past
  // `deadline` stops the kernel, or, when the deadline carries an abort flag, raises it and
  // returns garbage (deadline.failed() tells); returns garbage once the abort word is set.
  __forceinline__ __device__ Payload read(u32 flag, Deadline& deadline) const {
    Payload out;
    while (!readOnce(flag, out)) {
      if (deadline.expired()) {
        if (!deadline.aborted) {
          JMSCCLPP_GIVE_UP(deadline, AbortTimeout, "LL16 packet read: the packet did not arrive before the deadline");
        }
        break;
      }
    }
    return out;
  }

  __forceinline__ __device__ Payload read(u32 flag, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) const {
    Deadline deadline(timeoutNs);
    return read(flag, deadline);
  }

  // read that also ends on `abort`: `ok` tells whether the payload is the packet's.
  __forceinline__ __device__ Payload read(u32 flag, AbortFlag abort, bool& ok,
                                          u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) const {
    Deadline deadline(timeoutNs, abort);
    Payload out = read(flag, deadline);
    ok = !deadline.failed();
    return out;
  }

  // Zeroes the packet (flag 0: nothing a reader accepts).
  __forceinline__ __device__ void clear() { write(0u, 0u, 0u); }
};

static_assert(sizeof(LL16Packet) == 16, "LL16Packet.BYTES");

// 8 bytes, 4 of payload: {data, flag}, written and read with one 8-byte volatile access, so data
// and flag always come from the same store.
struct alignas(8) LL8Packet {
  u32 data;
  u32 flag;

  typedef u32 Payload;

  __forceinline__ __device__ void write(u32 value, u32 flagValue) {
    asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" ::"l"(this), "r"(value), "r"(flagValue) : "memory");
  }

  __forceinline__ __device__ bool readOnce(u32 expectedFlag, Payload& out) const {
    u32 d, f;
    asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(d), "=r"(f) : "l"(this) : "memory");
    out = d;
    return f == expectedFlag;
  }

  // Waits until the packet carries `expectedFlag` and returns its data. Past `deadline` stops
  // the kernel, or, when the deadline carries an abort flag, raises it and returns garbage
  // (deadline.failed() tells); returns garbage once the abort word is set.
  __forceinline__ __device__ Payload read(u32 expectedFlag, Deadline& deadline) const {
    Payload out;
    while (!readOnce(expectedFlag, out)) {
      if (deadline.expired()) {
        if (!deadline.aborted) {
          JMSCCLPP_GIVE_UP(deadline, AbortTimeout, "LL8 packet read: the packet did not arrive before the deadline");
        }
        break;
      }
    }
    return out;
  }

  __forceinline__ __device__ Payload read(u32 expectedFlag, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) const {
    Deadline deadline(timeoutNs);
    return read(expectedFlag, deadline);
  }

  // read that also ends on `abort`: `ok` tells whether the payload is the packet's.
  __forceinline__ __device__ Payload read(u32 expectedFlag, AbortFlag abort, bool& ok,
                                          u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) const {
    Deadline deadline(timeoutNs, abort);
    Payload out = read(expectedFlag, deadline);
    ok = !deadline.failed();
    return out;
  }

  __forceinline__ __device__ void clear() { write(0u, 0u); }
};

static_assert(sizeof(LL8Packet) == 8, "LL8Packet.BYTES");

// Packs `payloadBytes` of `data` (a multiple of the packet's payload size) into packets at
// `packets`, each with `flag`: thread `threadId` of `numThreads` packs packets threadId,
// threadId + numThreads, ... (interleaved, so a warp's stores are contiguous). The calling
// threads together pack the whole range; nothing orders them with each other.
template <typename Packet>
__forceinline__ __device__ void copyToPackets(void* packets, const void* data, u64 payloadBytes, u32 threadId,
                                              u32 numThreads, u32 flag) {
  typedef typename Packet::Payload Payload;
  const Payload* from = static_cast<const Payload*>(data);
  Packet* to = static_cast<Packet*>(packets);
  u64 count = payloadBytes / sizeof(Payload);
  for (u64 i = threadId; i < count; i += numThreads) {
    to[i].write(from[i], flag);
  }
}

// Waits for each of the packets at `packets` to carry `flag` and unpacks their `payloadBytes` of
// payload into `data`, split among the threads as copyToPackets splits. `deadline` bounds this
// thread's whole share; past it the kernel stops, or, when the deadline carries an abort flag,
// the rest of the share is garbage and the result false (also once the abort word is set).
template <typename Packet>
__forceinline__ __device__ bool copyFromPackets(void* data, const void* packets, u64 payloadBytes, u32 threadId,
                                                u32 numThreads, u32 flag, Deadline& deadline) {
  typedef typename Packet::Payload Payload;
  Payload* to = static_cast<Payload*>(data);
  const Packet* from = static_cast<const Packet*>(packets);
  u64 count = payloadBytes / sizeof(Payload);
  for (u64 i = threadId; i < count && !deadline.failed(); i += numThreads) {
    to[i] = from[i].read(flag, deadline);
  }
  return !deadline.failed();
}

template <typename Packet>
__forceinline__ __device__ void copyFromPackets(void* data, const void* packets, u64 payloadBytes, u32 threadId,
                                                u32 numThreads, u32 flag,
                                                u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
  Deadline deadline(timeoutNs);
  copyFromPackets<Packet>(data, packets, payloadBytes, threadId, numThreads, flag, deadline);
}

// copyFromPackets that also ends on `abort`: false when the job was aborted or the deadline
// passed (which raises the flag) before this thread's share arrived.
template <typename Packet>
__forceinline__ __device__ bool copyFromPackets(void* data, const void* packets, u64 payloadBytes, u32 threadId,
                                                u32 numThreads, u32 flag, AbortFlag abort,
                                                u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
  Deadline deadline(timeoutNs, abort);
  return copyFromPackets<Packet>(data, packets, payloadBytes, threadId, numThreads, flag, deadline);
}

// Zeroes the packets that carry `payloadBytes` of payload, split among the threads as above.
template <typename Packet>
__forceinline__ __device__ void clearPackets(void* packets, u64 payloadBytes, u32 threadId, u32 numThreads) {
  Packet* p = static_cast<Packet*>(packets);
  u64 count = payloadBytes / sizeof(typename Packet::Payload);
  for (u64 i = threadId; i < count; i += numThreads) {
    p[i].clear();
  }
}

}  // namespace jmscclpp

#endif  // JMSCCLPP_PACKET_CUH_
