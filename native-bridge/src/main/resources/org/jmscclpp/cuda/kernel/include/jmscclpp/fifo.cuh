// jmscclpp device API: pushing proxy triggers into a fifo. The handle has the layout that
// org.jmscclpp.core.proxy.Fifo#encodeDeviceHandle writes; the protocol (lap-parity commit bit, tail,
// proxy state) is the one of Fifo's class comment and FifoProducer#push.
#ifndef JMSCCLPP_FIFO_CUH_
#define JMSCCLPP_FIFO_CUH_

#include "jmscclpp/atomics.cuh"
#include "jmscclpp/trigger.cuh"

namespace jmscclpp {

// Byte distance from the fifo's tail word back to the proxy's state word (FifoLayout.TAIL -
// FifoLayout.STATE): both live in the fifo's host-visible buffer, wherever head is.
constexpr u64 FifoStateBeforeTail = 56;

// What push returns when it gave up (a deadline with an abort flag, see AbortFlag): no position.
constexpr u64 FifoPushFailed = ~0ULL;

// What a kernel needs to push into a Fifo: 40 bytes, Fifo#encodeDeviceHandle's order.
//
// triggers, tail and the state word are in the fifo's pinned host buffer (the proxy polls the
// ring and stores the tail there); for a GPU fifo, head and tailCache are in this GPU's memory,
// so claiming a position is a device atomic and the tail crosses PCIe only when the ring looks
// full by the cached value.
struct FifoDeviceHandle {
  ProxyTrigger* triggers;  // slot 0 of the ring
  u64* head;               // positions claimed (device atomic fetch-add)
  u64* tail;               // positions consumed (the proxy's release store)
  u64* tailCache;          // a tail value read earlier by some pusher (atomic max)
  u32 capacity;            // slots, a power of two
  u32 pad;

  // The proxy's state: 0 while it runs (or has not started), non-zero once it stopped or failed
  // and takes no more triggers. Acquire, so that a zero read is not older than the tail read next.
  __forceinline__ __device__ u64 proxyState() const {
    return loadAcquireSys(reinterpret_cast<const u64*>(reinterpret_cast<const char*>(tail) - FifoStateBeforeTail));
  }

  // Whether the proxy has stopped or failed: a wait on it would never end.
  __forceinline__ __device__ bool proxyGone() const { return proxyState() != 0; }

  // Appends `trigger` (bit 63 of snd is ignored) and returns its position, the value the proxy's
  // tail has while it handles it. Claims the position with one atomic add on head; when the slot
  // still holds the trigger of the previous lap, waits for the proxy to consume it. Then writes
  // the slot with one 16-byte release store whose snd carries the position's commit bit: that
  // store is what publishes the trigger to the proxy.
  //
  // Gives up when the ring stays full past `deadline` or when the proxy stopped or failed while
  // this thread waited for room: stops the kernel, or, when the deadline carries an abort flag,
  // raises it and returns FifoPushFailed (also when the flag was raised while it waited). The
  // position is then claimed and never written, as in FifoProducer#push: the fifo is broken for
  // every producer.
  __forceinline__ __device__ u64 push(ProxyTrigger trigger, Deadline& deadline) {
    u64 pos = fetchAddRelaxedGpu(head, 1);
    // The cached tail only grows and is never above the real one: a position below it + capacity
    // is certainly free, and the host-resident tail is read only when the ring looks full.
    if (pos >= capacity + loadRelaxedSys(tailCache)) {
      while (true) {
        u64 t = loadAcquireSys(tail);
        maxRelaxedGpu(tailCache, t);
        if (pos < t + capacity) {
          break;
        }
        if (proxyGone()) {
          JMSCCLPP_GIVE_UP(deadline, AbortProxyGone, "fifo push: the proxy stopped or failed while the ring was full");
          return FifoPushFailed;
        }
        if (deadline.expired()) {
          if (!deadline.aborted) {
            JMSCCLPP_GIVE_UP(deadline, AbortTimeout,
                             "fifo push: the ring stayed full past the deadline (the proxy does not consume)");
          }
          return FifoPushFailed;
        }
      }
    }
    // Lap pos / capacity is even exactly when bit log2(capacity) of pos is clear: the commit bit
    // is then 1, so a zeroed ring reads empty on lap 0 and a previous lap's slot never looks fresh.
    u64 commit = (pos & capacity) == 0 ? TriggerCommitBit : 0;
    u64 snd = (trigger.snd & ~TriggerCommitBit) | commit;
    ProxyTrigger* slot = triggers + (pos & (capacity - 1));
    // One 16-byte store: the slot is 16-byte aligned, so both words reach host memory in one PCIe
    // write and the proxy never sees the new snd with an old fst (MSCCL++ relies on the same).
    // Release orders everything this thread (and, cumulatively, its block up to the last
    // __syncthreads) wrote before, so the proxy's copy reads the data the trigger names.
    asm volatile("st.release.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(slot), "l"(trigger.fst), "l"(snd) : "memory");
    return pos;
  }

  // push with its own deadline, `timeoutNs` from the first wait.
  __forceinline__ __device__ u64 push(ProxyTrigger trigger, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    return push(trigger, deadline);
  }

  // push that also ends on `abort`: FifoPushFailed when it gave up (see AbortFlag).
  __forceinline__ __device__ u64 push(ProxyTrigger trigger, AbortFlag abort,
                                      u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return push(trigger, deadline);
  }

  // Returns once the proxy has consumed position `pos` (its tail passed it), with acquire: what
  // the proxy wrote before moving its tail is visible. Returns at once for a consumed position.
  // Returns true then. Past `deadline`, or when the proxy stopped or failed before consuming
  // `pos`, stops the kernel, or, when the deadline carries an abort flag, raises it and returns
  // false (also when the flag was raised while it waited, or for pos FifoPushFailed).
  __forceinline__ __device__ bool sync(u64 pos, Deadline& deadline) {
    if (pos == FifoPushFailed) {
      return false;
    }
    while (true) {
      u64 t = loadAcquireSys(tail);
      if (pos < t) {
        maxRelaxedGpu(tailCache, t);
        return true;
      }
      if (proxyGone()) {
        return JMSCCLPP_GIVE_UP(deadline, AbortProxyGone,
                                "fifo sync: the proxy stopped or failed before consuming the position");
      }
      if (deadline.expired()) {
        if (deadline.aborted) {
          return false;
        }
        return JMSCCLPP_GIVE_UP(deadline, AbortTimeout, "fifo sync: the position was not consumed before the deadline");
      }
    }
  }

  // sync with its own deadline, `timeoutNs` from the first wait.
  __forceinline__ __device__ void sync(u64 pos, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    sync(pos, deadline);
  }

  // sync that also ends on `abort` (see AbortFlag): false when it gave up.
  __forceinline__ __device__ bool sync(u64 pos, AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return sync(pos, deadline);
  }
};

static_assert(sizeof(FifoDeviceHandle) == 40, "Fifo.encodeDeviceHandle writes 40 bytes (FifoLayout.DEVICE_HANDLE_BYTES)");

}  // namespace jmscclpp

#endif  // JMSCCLPP_FIFO_CUH_
