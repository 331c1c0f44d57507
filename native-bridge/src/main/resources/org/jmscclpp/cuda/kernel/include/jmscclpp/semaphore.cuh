// jmscclpp device API: semaphores. Host2DeviceSemaphoreDeviceHandle has the layout of
// org.jmscclpp.core.semaphore.Host2DeviceSemaphore.DeviceHandle#encode, MemoryDevice2DeviceSemaphoreDeviceHandle
// that of MemoryDevice2DeviceSemaphore.DeviceHandle#encode; their poll and wait are
// org.jmscclpp.core.semaphore.InboundToken's.
//
// A semaphore is a 64-bit token that only grows: the peer adds one per signal, and this side
// counts the signals it consumed in its expected-inbound word. Only one thread at a time may
// poll or wait on a handle (the expected-inbound word is read and written without atomics).
//
// Each wait comes in two forms: wait(timeoutNs), which stops the kernel at its deadline, and
// wait(AbortFlag, timeoutNs), which returns false instead, and also once the job is aborted (see
// AbortFlag in atomics.cuh).
#ifndef JMSCCLPP_SEMAPHORE_CUH_
#define JMSCCLPP_SEMAPHORE_CUH_

#include "jmscclpp/atomics.cuh"

namespace jmscclpp {

namespace detail {

// Never abandons a wait: for semaphores whose signal depends on no proxy.
struct NeverAbandon {
  __forceinline__ __device__ bool operator()() const { return false; }
};

// How many looks at the token pass between two calls of a wait's abandon check, which may cost a
// PCIe round trip (a proxy's state word is in host memory) and would slow the spin otherwise.
constexpr u32 AbandonCheckPeriod = 64;

__forceinline__ __device__ u64 loadToken(const u64* token, bool acquire) {
  return acquire ? loadAcquireSys(token) : loadRelaxedSys(token);
}

// Consumes one signal if one has arrived that was not consumed yet (InboundToken#poll).
__forceinline__ __device__ bool pollInbound(const u64* inbound, u64* expected) {
  u64 e = *expected;
  if (loadAcquireSys(inbound) > e) {
    *expected = e + 1;
    return true;
  }
  return false;
}

// Waits for the next signal and consumes it (InboundToken#wait): spins until the token reaches
// expected + 1, then stores expected + 1 and returns true. With `acquire`, the loads after it see
// what the signaller wrote before signalling. Past `deadline`, or when `abandoned()` holds while
// the signal has not arrived, gives up (Deadline::giveUp: returns false, consuming nothing, when
// the deadline carries an abort flag, else stops the kernel; `timeoutMessage` and
// `abandonedMessage` name the wait); returns false at once when the deadline's abort word is set.
template <typename Abandon>
__forceinline__ __device__ bool awaitInbound(const u64* inbound, u64* expected, bool acquire, Deadline& deadline,
                                             Abandon abandoned, const char* timeoutMessage,
                                             const char* abandonedMessage) {
  u64 target = *expected + 1;
  u32 spins = 0;
  while (loadToken(inbound, acquire) < target) {
    if (++spins == AbandonCheckPeriod) {
      spins = 0;
      if (abandoned() && loadToken(inbound, acquire) < target) {
        return JMSCCLPP_GIVE_UP(deadline, AbortProxyGone, abandonedMessage);
      }
    }
    if (deadline.expired()) {
      if (deadline.aborted) {
        return false;
      }
      return JMSCCLPP_GIVE_UP(deadline, AbortTimeout, timeoutMessage);
    }
  }
  *expected = target;
  return true;
}

}  // namespace detail

// A semaphore that host code signals (the proxy, after the data it moved) and this GPU waits on:
// 16 bytes, Host2DeviceSemaphore.DeviceHandle#encode's order.
struct Host2DeviceSemaphoreDeviceHandle {
  u64* inboundToken;     // raised by the peer's proxy (Connection#updateAndSync)
  u64* expectedInbound;  // signals consumed here; device memory of this rank

  // Consumes one signal if one has arrived that was not consumed yet; never waits.
  __forceinline__ __device__ bool poll() { return detail::pollInbound(inboundToken, expectedInbound); }

  // Waits for the next signal (acquire: the data the proxy moved before raising the token is
  // visible) and consumes it. Stops the kernel when none arrives within `timeoutNs`.
  __forceinline__ __device__ void wait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    detail::awaitInbound(inboundToken, expectedInbound, true, deadline, detail::NeverAbandon(),
                         "host-to-device semaphore wait: no signal before the deadline", "");
  }

  // wait without ordering the loads that follow it.
  __forceinline__ __device__ void relaxedWait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    detail::awaitInbound(inboundToken, expectedInbound, false, deadline, detail::NeverAbandon(),
                         "host-to-device semaphore relaxedWait: no signal before the deadline", "");
  }

  // wait that also ends on `abort` (see AbortFlag): true once the signal arrived and was
  // consumed; false when the job was aborted or the deadline passed (which raises the flag).
  __forceinline__ __device__ bool wait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return detail::awaitInbound(inboundToken, expectedInbound, true, deadline, detail::NeverAbandon(),
                                "host-to-device semaphore wait: no signal before the deadline", "");
  }

  __forceinline__ __device__ bool relaxedWait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return detail::awaitInbound(inboundToken, expectedInbound, false, deadline, detail::NeverAbandon(),
                                "host-to-device semaphore relaxedWait: no signal before the deadline", "");
  }
};

static_assert(sizeof(Host2DeviceSemaphoreDeviceHandle) == 16, "Host2DeviceSemaphore.DEVICE_HANDLE_BYTES");

// A semaphore that GPU code signals by an atomic add on the peer's token, mapped here through
// CUDA IPC, and GPU code waits on: 24 bytes, MemoryDevice2DeviceSemaphore.DeviceHandle#encode's order.
struct MemoryDevice2DeviceSemaphoreDeviceHandle {
  u64* inboundToken;        // this rank's token, raised by the peer
  u64* remoteInboundToken;  // the peer's token, mapped here, raised by signal()
  u64* expectedInbound;     // signals consumed here

  // Raises the peer's token by one after every earlier write of this thread (and of its block
  // up to the last __syncthreads, release being cumulative): the peer's wait then sees them.
  // System scope, because the peer is another GPU (or this one through another mapping).
  __forceinline__ __device__ void signal() { addReleaseSys(remoteInboundToken, 1); }

  // Raises the peer's token by one without ordering earlier writes: for signals that carry no
  // data, or whose data is ordered by other means.
  __forceinline__ __device__ void relaxedSignal() { addRelaxedSys(remoteInboundToken, 1); }

  // Consumes one signal if one has arrived that was not consumed yet; never waits.
  __forceinline__ __device__ bool poll() { return detail::pollInbound(inboundToken, expectedInbound); }

  // Waits for the peer's next signal (acquire) and consumes it. Stops the kernel when none
  // arrives within `timeoutNs`.
  __forceinline__ __device__ void wait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    detail::awaitInbound(inboundToken, expectedInbound, true, deadline, detail::NeverAbandon(),
                         "memory semaphore wait: no signal before the deadline", "");
  }

  // wait without ordering the loads that follow it.
  __forceinline__ __device__ void relaxedWait(u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs);
    detail::awaitInbound(inboundToken, expectedInbound, false, deadline, detail::NeverAbandon(),
                         "memory semaphore relaxedWait: no signal before the deadline", "");
  }

  // wait that also ends on `abort` (see AbortFlag): true once the peer's signal arrived and was
  // consumed; false when the job was aborted or the deadline passed (which raises the flag).
  __forceinline__ __device__ bool wait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return detail::awaitInbound(inboundToken, expectedInbound, true, deadline, detail::NeverAbandon(),
                                "memory semaphore wait: no signal before the deadline", "");
  }

  // Waits with `deadline` (its abort flag, if any, and its clock, shared with other waits).
  __forceinline__ __device__ bool wait(Deadline& deadline) {
    return detail::awaitInbound(inboundToken, expectedInbound, true, deadline, detail::NeverAbandon(),
                                "memory semaphore wait: no signal before the deadline", "");
  }

  __forceinline__ __device__ bool relaxedWait(AbortFlag abort, u64 timeoutNs = JMSCCLPP_DEVICE_TIMEOUT_NS) {
    Deadline deadline(timeoutNs, abort);
    return detail::awaitInbound(inboundToken, expectedInbound, false, deadline, detail::NeverAbandon(),
                                "memory semaphore relaxedWait: no signal before the deadline", "");
  }
};

static_assert(sizeof(MemoryDevice2DeviceSemaphoreDeviceHandle) == 24, "MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES");

}  // namespace jmscclpp

#endif  // JMSCCLPP_SEMAPHORE_CUH_
