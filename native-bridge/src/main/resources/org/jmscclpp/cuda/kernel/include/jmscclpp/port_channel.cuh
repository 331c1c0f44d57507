// jmscclpp device API: channels whose data a proxy moves, MSCCL++'s PortChannelDeviceHandle. The
// handle has the layout of org.jmscclpp.core.channel.PortChannel#encodeDeviceHandle, and its verbs push
// the triggers that PortChannel's verbs of the same name push; org.jmscclpp.core.proxy.ProxyService
// handles them (DATA: copy, FLAG: raise the peer's semaphore after the data, SYNC: flush, then
// store position + 1 into this semaphore's flushed-position word).
//
// Puts, signals and flushes may be called by any number of threads at once; wait and poll consume
// the peer's signals and belong to one thread at a time. Offsets and sizes are not checked here:
// the proxy checks each trigger, and one outside its memory makes the proxy fail, which ends the
// waits below (the fifo's state word) instead of letting them spin to their deadline.
//
// Every verb that may wait has a form that takes an AbortFlag (atomics.cuh): it returns instead of
// stopping the kernel when it gives up (deadline passed, proxy gone: the flag is raised then) or
// when the job is aborted (the proxy of an aborted communicator stops, and the flag is set):
// pushes return FifoPushFailed, the others false.
#ifndef JMSCCLPP_PORT_CHANNEL_CUH_
#define JMSCCLPP_PORT_CHANNEL_CUH_

#include "jmscclpp/atomics.cuh"
#include "jmscclpp/fifo.cuh"
#include "jmscclpp/semaphore.cuh"
#include "jmscclpp/trigger.cuh"

namespace jmscclpp {

namespace detail {

// Abandons a wait once the proxy that would end it has stopped or failed.
struct ProxyGone {
  const FifoDeviceHandle* fifo;
  __forceinline__ __device__ bool operator()() const { return fifo->proxyGone(); }
};

}  // namespace detail

// 80 bytes, PortChannel#encodeDeviceHandle's order.
struct PortChannelDeviceHandle {
  u32 semaphoreId;
  u32 pad;
  Host2DeviceSemaphoreDeviceHandle semaphore;  // raised by the peer's proxy
  FifoDeviceHandle fifo;                       // this rank's proxy's fifo
  u64* flushed;                                // this semaphore's flushed-position word (ProxyService)
  u32 dst;                                     // destination memory id: the peer's memory
  u32 src;                                     // source memory id: this rank's memory

  __forceinline__ __device__ ProxyTrigger trigger(u32 type, u64 dstOffset, u64 srcOffset, u64 size) const {
    return ProxyTrigger(type, dst, dstOffset, src, srcOffset, size, semaphoreId);
  }

  // Pushes a DATA trigger: the proxy copies `size` bytes from this rank's memory at srcOffset to
  // the peer's at dstOffset. Returns the fifo position once the trigger is in the fifo, not when
  // the bytes moved (flush tells that).
  __forceinline__ __device__ u64 put(u64 dstOffset, u64 srcOffset, u64 size) {
    return fifo.push(trigger(TriggerData, dstOffset, srcOffset, size));
  }

  // put with the same offset on both sides.
  __forceinline__ __device__ u64 put(u64 offset, u64 size) { return put(offset, offset, size); }

  // Pushes a FLAG trigger: the proxy raises the peer's semaphore after everything pushed before
  // on this connection. Returns the fifo position.
  __forceinline__ __device__ u64 signal() { return fifo.push(trigger(TriggerFlag, 0, 0, 0)); }

  // A put and a signal in one trigger: the peer sees the signal after the data.
  __forceinline__ __device__ u64 putWithSignal(u64 dstOffset, u64 srcOffset, u64 size) {
    return fifo.push(trigger(TriggerData | TriggerFlag, dstOffset, srcOffset, size));
  }

  __forceinline__ __device__ u64 putWithSignal(u64 offset, u64 size) { return putWithSignal(offset, offset, size); }

  // put, signal and putWithSignal that end on `abort`: FifoPushFailed when the push gave up.
  __forceinline__ __device__ u64 put(u64 dstOffset, u64 srcOffset, u64 size, AbortFlag abort) {
    return fifo.push(trigger(TriggerData, dstOffset, srcOffset, size), abort);
  }

  __forceinline__ __device__ u64 signal(AbortFlag abort) { return fifo.push(trigger(TriggerFlag, 0, 0, 0), abort); }

  __forceinline__ __device__ u64 putWithSignal(u64 dstOffset, u64 srcOffset, u64 size, AbortFlag abort) {
    return fifo.push(trigger(TriggerData | TriggerFlag, dstOffset, srcOffset, size), abort);
  }

  // Pushes a SYNC trigger and returns once the proxy's flush of the connection covered it: every
  // put and signal pushed before for this connection (by any thread) is then at the peer.
  // `timeoutNs` bounds push and wait together; past it, or once the proxy stopped or failed, the
  // kernel stops.
  __forceinline__ __device__ void flush(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    u64 pos = fifo.push(trigger(TriggerSync, 0, 0, 0), deadline);
    awaitFlushed(pos, deadline, "port channel flush: the proxy stopped or failed before the flush completed",
                 "port channel flush: the flush did not complete before the deadline");
  }

  // A put, a signal and a flush in one trigger; returns once the flush covered it (as flush).
  __forceinline__ __device__ void putWithSignalAndFlush(u64 dstOffset, u64 srcOffset, u64 size,
                                                        u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    u64 pos = fifo.push(trigger(TriggerData | TriggerFlag | TriggerSync, dstOffset, srcOffset, size), deadline);
    awaitFlushed(pos, deadline,
                 "port channel putWithSignalAndFlush: the proxy stopped or failed before the flush completed",
                 "port channel putWithSignalAndFlush: the flush did not complete before the deadline");
  }

  // flush that ends on `abort`: true once the flush covered the trigger, false when it gave up.
  __forceinline__ __device__ bool flush(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    u64 pos = fifo.push(trigger(TriggerSync, 0, 0, 0), deadline);
    return awaitFlushed(pos, deadline, "port channel flush: the proxy stopped or failed before the flush completed",
                        "port channel flush: the flush did not complete before the deadline");
  }

  // putWithSignalAndFlush that ends on `abort`: true once the flush covered it, false when it gave up.
  __forceinline__ __device__ bool putWithSignalAndFlush(u64 dstOffset, u64 srcOffset, u64 size, AbortFlag abort,
                                                        u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    u64 pos = fifo.push(trigger(TriggerData | TriggerFlag | TriggerSync, dstOffset, srcOffset, size), deadline);
    return awaitFlushed(pos, deadline,
                        "port channel putWithSignalAndFlush: the proxy stopped or failed before the flush completed",
                        "port channel putWithSignalAndFlush: the flush did not complete before the deadline");
  }

  // putWithSignalAndFlush with the same offset on both sides. (No timeout parameter here: a third
  // integer argument would read as the source offset of the overload above.)
  __forceinline__ __device__ void putWithSignalAndFlush(u64 offset, u64 size) {
    putWithSignalAndFlush(offset, offset, size);
  }

  // Waits for the peer's next signal (its proxy's FLAG, raised after its data; acquire) and
  // consumes it. Stops the kernel past `timeoutNs`, or once this rank's proxy stopped or failed
  // while the signal had not arrived.
  __forceinline__ __device__ void wait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    detail::awaitInbound(semaphore.inboundToken, semaphore.expectedInbound, true, deadline, detail::ProxyGone{&fifo},
                         "port channel wait: no signal before the deadline",
                         "port channel wait: the proxy stopped or failed before the signal arrived");
  }

  // wait that ends on `abort`: true once the signal arrived and was consumed, false when it gave up.
  __forceinline__ __device__ bool wait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return detail::awaitInbound(semaphore.inboundToken, semaphore.expectedInbound, true, deadline,
                                detail::ProxyGone{&fifo}, "port channel wait: no signal before the deadline",
                                "port channel wait: the proxy stopped or failed before the signal arrived");
  }

  // Consumes one signal of the peer if one has arrived that was not consumed yet; never waits.
  __forceinline__ __device__ bool poll() { return semaphore.poll(); }

 private:
  // Spins until the flushed-position word (the proxy's release store of position + 1) is above
  // `pos`; false when it gave up (see Deadline::giveUp), or the push before did (FifoPushFailed).
  __forceinline__ __device__ bool awaitFlushed(u64 pos, Deadline& deadline, const char* goneMessage,
                                               const char* timeoutMessage) {
    if (pos == FifoPushFailed) {
      return false;
    }
    while (loadAcquireSys(flushed) <= pos) {
      if (fifo.proxyGone() && loadAcquireSys(flushed) <= pos) {
        return JMSCCLPP_GIVE_UP(deadline, AbortProxyGone, goneMessage);
      }
      if (deadline.expired()) {
        if (deadline.aborted) {
          return false;
        }
        return JMSCCLPP_GIVE_UP(deadline, AbortTimeout, timeoutMessage);
      }
    }
    return true;
  }
};

static_assert(sizeof(PortChannelDeviceHandle) == 80, "PortChannel.DEVICE_HANDLE_BYTES");

}  // namespace jmscclpp

#endif  // JMSCCLPP_PORT_CHANNEL_CUH_
