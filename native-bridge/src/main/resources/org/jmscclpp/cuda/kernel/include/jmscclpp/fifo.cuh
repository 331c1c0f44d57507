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

// What FifoDeviceHandle::tryPush did: pushed; gave up at its deadline with the ring full; gave up
// because the proxy stopped or failed. Neither failure claimed a position.
enum FifoPushStatus : u32 {
  FifoPushed = 0,
  FifoPushTimedOut = 1,
  FifoPushProxyGone = 2,
};

// What push returns when it gave up (a deadline with an abort flag, see AbortFlag). It claimed no
// position: the ring stays usable.
constexpr u64 FifoPushFailed = ~0ULL;

// What a kernel needs to push into a Fifo: 40 bytes, Fifo#encodeDeviceHandle's order.
//
// triggers, tail and the state word are in the fifo's pinned host buffer (the proxy polls the
// ring and stores the tail there); for a GPU fifo, head and tailCache are in this GPU's memory,
// so claiming a position is a device atomic and the tail crosses PCIe only when the ring looks
// full by the cached value.
struct FifoDeviceHandle {
  ProxyTrigger* triggers;  // slot 0 of the ring
  u64* head;               // positions claimed (device fetch-and-add; see tryPush)
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

  // Appends `trigger` (bit 63 of snd is ignored) unless the ring stays full past `deadline` or the
  // proxy is gone, and says which; on FifoPushed, *pos is the trigger's position, the value the
  // proxy's tail has while it handles it. Never stops the kernel: the caller decides what a push
  // that gave up means.
  //
  // The claim (Fifo's protocol): position h is taken by one fetch-and-add of head, as MSCCL++
  // does, with the cached tail read beside it, so a push with room costs one round trip to device
  // memory. When the ring looks full (h >= tail + capacity) the thread gives h back by a
  // compare-and-set of head from h + 1 to h, which succeeds once every later claim has been given
  // back (their holders find the ring full too, and a later slot is never free before h's), or
  // finds h's slot free meanwhile and keeps it. Having given it back it waits without holding a
  // claim and takes the next position h = head by a compare-and-set of head from h to h + 1 only
  // while h < tail + capacity: a push that gives up leaves the ring as it found it, and a position
  // that stays claimed is written at once, so the proxy never waits for a position nobody will
  // write. The slot is written with one 16-byte release store whose snd carries the position's
  // commit bit: that store is what publishes the trigger to the proxy.
  //
  // Pushes of many threads at once are correct and, while the ring has room, take one atomic each
  // (every lane of a warp at once included).
  __forceinline__ __device__ FifoPushStatus tryPush(ProxyTrigger trigger, Deadline& deadline, u64* pos) {
    // The cached tail only grows and is never above the real one: a position below it + capacity
    // is certainly free, and the host-resident tail is read only when the ring looks full by it.
    u64 cached = loadRelaxedSys(tailCache);
    u64 h = fetchAddRelaxedGpu(head, 1);
    if (h >= capacity + cached && !keepOrGiveBack(h)) {
      FifoPushStatus status = claimWhenFree(deadline, &h);
      if (status != FifoPushed) {
        return status;
      }
    }
    // Lap h / capacity is even exactly when bit log2(capacity) of h is clear: the commit bit is
    // then 1, so a zeroed ring reads empty on lap 0 and a previous lap's slot never looks fresh.
    u64 commit = (h & capacity) == 0 ? TriggerCommitBit : 0;
    u64 snd = (trigger.snd & ~TriggerCommitBit) | commit;
    ProxyTrigger* slot = triggers + (h & (capacity - 1));
    // One 16-byte store: the slot is 16-byte aligned, so both words reach host memory in one PCIe
    // write and the proxy never sees the new snd with an old fst (MSCCL++ relies on the same).
    // Release orders everything this thread (and, cumulatively, its block up to the last
    // __syncthreads) wrote before, so the proxy's copy reads the data the trigger names.
    asm volatile("st.release.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(slot), "l"(trigger.fst), "l"(snd) : "memory");
    *pos = h;
    return FifoPushed;
  }

 private:
  // Position h was claimed by fetch-and-add while the cached tail said the ring is full: true once
  // the real tail shows h's slot free (the claim stands), false once h is given back (head moved
  // from h + 1 back to h). A later claim keeps head above h + 1 only while its holder looks at the
  // tail or gives it back itself: its slot is free only after h's is. No deadline: the wait lasts
  // as long as the pushes above it take to give their positions back.
  __forceinline__ __device__ bool keepOrGiveBack(u64 h) {
    while (true) {
      u64 t = loadAcquireSys(tail);
      maxRelaxedGpu(tailCache, t);
      if (h < t + capacity) {
        return true;
      }
      if (casRelaxedGpu(head, h + 1, h) == h + 1) {
        return false;
      }
    }
  }

  // Claims the next position once its slot is free, holding no claim while the ring is full: on
  // FifoPushed *h is the position; otherwise nothing was claimed.
  __forceinline__ __device__ FifoPushStatus claimWhenFree(Deadline& deadline, u64* claimed) {
    u64 h = loadRelaxedGpu(head);
    while (true) {
      if (h >= capacity + loadRelaxedSys(tailCache)) {
        u64 t = loadAcquireSys(tail);
        maxRelaxedGpu(tailCache, t);
        if (h >= t + capacity) {
          if (proxyGone()) {
            return FifoPushProxyGone;
          }
          if (deadline.expired()) {
            return FifoPushTimedOut;
          }
          h = loadRelaxedGpu(head);
          continue;
        }
      }
      // h < tail + capacity: the slot is free, and stays free until head moves past h
      u64 seen = casRelaxedGpu(head, h, h + 1);
      if (seen == h) {
        *claimed = h;
        return FifoPushed;
      }
      h = seen;
    }
  }

 public:
  // tryPush with its own deadline, `timeoutNs` from the first wait.
  __forceinline__ __device__ FifoPushStatus tryPush(ProxyTrigger trigger, u64* pos,
                                                    u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    return tryPush(trigger, deadline, pos);
  }

  // Appends `trigger` (bit 63 of snd is ignored) and returns its position, as tryPush. When the
  // ring stays full past `deadline` or the proxy stopped or failed while this thread waited for
  // room, stops the kernel (JMSCCLPP_FAIL), or, when the deadline carries an abort flag, raises it
  // and returns FifoPushFailed (also when the flag was raised while it waited). Having claimed
  // nothing, it leaves the ring usable either way.
  __forceinline__ __device__ u64 push(ProxyTrigger trigger, Deadline& deadline) {
    u64 pos = 0;
    FifoPushStatus status = tryPush(trigger, deadline, &pos);
    if (status == FifoPushProxyGone) {
      JMSCCLPP_GIVE_UP(deadline, AbortProxyGone, "fifo push: the proxy stopped or failed while the ring was full");
      return FifoPushFailed;
    }
    if (status == FifoPushTimedOut) {
      if (!deadline.aborted) {
        JMSCCLPP_GIVE_UP(deadline, AbortTimeout,
                         "fifo push: the ring stayed full past the deadline (the proxy does not consume)");
      }
      return FifoPushFailed;
    }
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
