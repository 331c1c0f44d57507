// GPU test and benchmark kernels for the fifo (MSCCL++'s FifoTest): device pushes, host polls.
// Handles are passed by value: the host passes the bytes of Fifo#encodeDeviceHandle as the
// parameter. Launch each with one block of one thread.
//
//   fifoPush(FifoDeviceHandle fifo, unsigned long long n, int mode)
//   fifoPushTimed(FifoDeviceHandle fifo, unsigned long long n, unsigned long long* elapsedNs)
//   fifoTryPush(FifoDeviceHandle fifo, unsigned long long first, unsigned long long perThread,
//               unsigned long long timeoutNs, unsigned long long* out)   (any grid)
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::FifoDeviceHandle;
using jmscclpp::FifoPushStatus;
using jmscclpp::ProxyTrigger;
using jmscclpp::TriggerCommitBit;

// Pushes n triggers, in position order, that the host polls and checks:
//   mode 0 (FifoTest.Fifo):              trigger i is fst = snd = i (bit 63 of snd cleared);
//   mode 1 (FifoTest.ZeroTrigger):       every trigger is fst = snd = 0;
//   mode 2 (FifoTest.WrapAtLapBoundary): trigger i is fst = i, snd = ~i (bit 63 cleared), and
//                                        the kernel syncs on the last position of every lap.
// Any other mode stops the kernel. A full ring makes a push wait for the host's polls; the
// kernel stops when the host does not consume within JMSCCLPP_DEVICE_TIMEOUT_NS.
extern "C" __global__ void fifoPush(FifoDeviceHandle fifo, unsigned long long n, int mode) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  if (mode < 0 || mode > 2) {
    JMSCCLPP_FAIL("fifoPush: mode is 0 (Fifo), 1 (ZeroTrigger) or 2 (WrapAtLapBoundary)");
  }
  for (unsigned long long i = 0; i < n; i++) {
    ProxyTrigger t;
    if (mode == 0) {
      t = ProxyTrigger(i, i & ~TriggerCommitBit);
    } else if (mode == 1) {
      t = ProxyTrigger(0, 0);
    } else {
      t = ProxyTrigger(i, ~i & ~TriggerCommitBit);
    }
    unsigned long long pos = fifo.push(t);
    if (mode == 2 && (pos + 1) % fifo.capacity == 0) {
      fifo.sync(pos);
    }
  }
}

// Pushes n triggers (fst = snd = i, as mode 0) and stores into *elapsedNs the %globaltimer
// nanoseconds from before the first push until the host consumed the last one (sync on its
// position): the producer's share of a trigger's cost is *elapsedNs / n. Nothing when n is 0.
extern "C" __global__ void fifoPushTimed(FifoDeviceHandle fifo, unsigned long long n, unsigned long long* elapsedNs) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || n == 0) {
    return;
  }
  unsigned long long start = jmscclpp::globalTimerNs();
  unsigned long long pos = 0;
  for (unsigned long long i = 0; i < n; i++) {
    pos = fifo.push(ProxyTrigger(i, i & ~TriggerCommitBit));
  }
  fifo.sync(pos);
  *elapsedNs = jmscclpp::globalTimerNs() - start;
}

// Pushes that may give up (FifoDeviceHandle::tryPush), from any grid: thread g (its global index)
// pushes up to perThread triggers, the i-th with fst = snd = first + g * perThread + i, each with
// a deadline of timeoutNs, and stops at its first push that gives up. It then writes
// out[2g] = the triggers it pushed and out[2g + 1] = the FifoPushStatus of the push that gave up
// (0 when none did). Never stops the kernel: the host checks that the ring stays usable after
// pushes that gave up, and that it received exactly the triggers pushed.
extern "C" __global__ void fifoTryPush(FifoDeviceHandle fifo, unsigned long long first, unsigned long long perThread,
                                       unsigned long long timeoutNs, unsigned long long* out) {
  unsigned long long g = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long pushed = 0;
  FifoPushStatus status = jmscclpp::FifoPushed;
  for (; pushed < perThread; pushed++) {
    unsigned long long id = (first + g * perThread + pushed) & ~TriggerCommitBit;
    unsigned long long pos;
    status = fifo.tryPush(ProxyTrigger(id, id), &pos, timeoutNs);
    if (status != jmscclpp::FifoPushed) {
      break;
    }
  }
  out[2 * g] = pushed;
  out[2 * g + 1] = status;
}
