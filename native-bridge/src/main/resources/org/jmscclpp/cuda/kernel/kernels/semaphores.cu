// GPU test and benchmark kernels for the semaphores. Handles are passed by value: the host passes
// the bytes of MemoryDevice2DeviceSemaphore.DeviceHandle#encode or Host2DeviceSemaphore.DeviceHandle#encode
// as the parameter. Launch each with one block of one thread.
//
//   d2dPingPong(MemoryDevice2DeviceSemaphoreDeviceHandle s, int rank, int iters, unsigned long long* elapsedNs)
//   h2dWait(Host2DeviceSemaphoreDeviceHandle s, int count, int* ok)
//   d2dWaitOrAbort(MemoryDevice2DeviceSemaphoreDeviceHandle s, jmscclpp::AbortFlag abort,
//                  unsigned long long timeoutNs, int* result)
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::Host2DeviceSemaphoreDeviceHandle;
using jmscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle;

// iters round trips between two ranks over a memory semaphore: rank 0 signals then waits, rank 1
// waits then signals. Stores the %globaltimer nanoseconds of the whole loop into *elapsedNs (one
// round trip is *elapsedNs / iters). Any rank but 0 and 1 stops the kernel; so does a wait that
// sees no signal within JMSCCLPP_DEVICE_TIMEOUT_NS.
extern "C" __global__ void d2dPingPong(MemoryDevice2DeviceSemaphoreDeviceHandle s, int rank, int iters,
                                       unsigned long long* elapsedNs) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  if (rank != 0 && rank != 1) {
    JMSCCLPP_FAIL("d2dPingPong: rank is 0 or 1");
  }
  unsigned long long start = jmscclpp::globalTimerNs();
  for (int i = 0; i < iters; i++) {
    if (rank == 0) {
      s.signal();
      s.wait();
    } else {
      s.wait();
      s.signal();
    }
  }
  *elapsedNs = jmscclpp::globalTimerNs() - start;
}

// Consumes count signals that the host raises (Host2DeviceSemaphore#signal, exactly count of
// them, before or during the launch), then stores into *ok 1 when the expected-inbound word
// advanced by exactly count and a final poll finds no further signal, else 0. A wait that sees
// no signal within JMSCCLPP_DEVICE_TIMEOUT_NS stops the kernel.
extern "C" __global__ void h2dWait(Host2DeviceSemaphoreDeviceHandle s, int count, int* ok) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  unsigned long long before = *s.expectedInbound;
  for (int i = 0; i < count; i++) {
    s.wait();
  }
  bool consumedAll = *s.expectedInbound == before + static_cast<unsigned long long>(count < 0 ? 0 : count);
  *ok = consumedAll && !s.poll() ? 1 : 0;
}

// One wait for the peer's signal that also ends on `abort` (a DeviceAbortFlag's address) or after
// timeoutNs: stores into *result 1 when the signal arrived, 2 when the wait gave up (the job was
// aborted, or the deadline passed and the wait raised the flag with AbortTimeout). Never traps.
extern "C" __global__ void d2dWaitOrAbort(MemoryDevice2DeviceSemaphoreDeviceHandle s, jmscclpp::AbortFlag abort,
                                          unsigned long long timeoutNs, int* result) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  *result = s.wait(abort, timeoutNs) ? 1 : 2;
}
