// GPU test and benchmark kernels for port channels (MSCCL++'s PortChannelOneToOneTest), for two
// ranks, each with its own proxy. Each rank's channel puts from its own buffer (src) into the
// peer's (dst) at the same offsets: an in-place buffer per rank, registered with the proxy
// service on both sides. Handles are passed by value: the host passes the bytes of
// PortChannel#encodeDeviceHandle as the parameter.
//
//   portPingPong(PortChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters, int flushEvery,
//                int* errors)                                              one block, up to 1024 threads
//   portPingPongPerf(PortChannelDeviceHandle ch, int rank, int iters,
//                    unsigned long long* elapsedNs)                        one block of one thread
//   portBandwidth(PortChannelDeviceHandle ch, unsigned long long bytes, int iters,
//                 unsigned long long* elapsedNs)                           one block of one thread
//
// Every wait ends at JMSCCLPP_DEVICE_TIMEOUT_NS, or once the rank's proxy stopped or failed, by
// stopping the kernel (CUDA_ERROR_ASSERT) rather than hanging.
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::PortChannelDeviceHandle;

// Ping-pong of nElem ints: in iteration i the writer is the rank with rank == i mod 2. It fills
// buf[j] = i + j with all threads, syncs the block, and thread 0 puts the nElem * 4 bytes into
// the peer's buffer with a signal (flushing after every flushEvery-th put of this rank; never in
// the loop when flushEvery <= 0). The other rank's thread 0 waits for the signal, the block
// syncs, and every thread checks its share of buf[j] == i + j, adding its mismatches to *errors.
// Each rank ends with a flush, so its proxy has moved everything when the kernel returns.
extern "C" __global__ void portPingPong(PortChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters,
                                        int flushEvery, int* errors) {
  if (blockIdx.x != 0) {
    return;
  }
  if (rank != 0 && rank != 1) {
    JMSCCLPP_FAIL("portPingPong: rank is 0 or 1");
  }
  if (nElem < 0) {
    JMSCCLPP_FAIL("portPingPong: nElem is negative");
  }
  unsigned long long bytes = static_cast<unsigned long long>(nElem) * sizeof(int);
  int puts = 0;
  int mismatches = 0;
  for (int i = 0; i < iters; i++) {
    bool writer = ((rank ^ i) & 1) == 0;
    if (writer) {
      for (int j = threadIdx.x; j < nElem; j += blockDim.x) {
        buf[j] = i + j;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        ch.putWithSignal(0, 0, bytes);
        if (flushEvery > 0 && ++puts % flushEvery == 0) {
          ch.flush();
        }
      }
    } else {
      if (threadIdx.x == 0) {
        ch.wait();
      }
      __syncthreads();
      for (int j = threadIdx.x; j < nElem; j += blockDim.x) {
        if (buf[j] != i + j) {
          mismatches++;
        }
      }
    }
    // the next iteration's writer overwrites buf: every thread's check must be done
    __syncthreads();
  }
  if (mismatches != 0) {
    atomicAdd(errors, mismatches);
  }
  if (threadIdx.x == 0) {
    ch.flush();
  }
}

// Latency: iters round trips of one int. Rank 0 puts with a signal, flushes and waits for the
// answer; rank 1 waits, then answers the same way. Stores the %globaltimer nanoseconds of the
// loop into *elapsedNs (one round trip is *elapsedNs / iters).
extern "C" __global__ void portPingPongPerf(PortChannelDeviceHandle ch, int rank, int iters,
                                            unsigned long long* elapsedNs) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  if (rank != 0 && rank != 1) {
    JMSCCLPP_FAIL("portPingPongPerf: rank is 0 or 1");
  }
  unsigned long long start = jmscclpp::globalTimerNs();
  for (int i = 0; i < iters; i++) {
    if (rank == 0) {
      ch.putWithSignal(0, 0, sizeof(int));
      ch.flush();
      ch.wait();
    } else {
      ch.wait();
      ch.putWithSignal(0, 0, sizeof(int));
      ch.flush();
    }
  }
  *elapsedNs = jmscclpp::globalTimerNs() - start;
}

// Bandwidth, both directions at once: both ranks run this. Each iteration puts `bytes` with a
// signal into the peer's buffer, then waits for the peer's signal of the same iteration, so each
// direction has one put in flight at a time. One flush at the end. Stores the %globaltimer
// nanoseconds from the first put until the flush into *elapsedNs; the bytes moved are
// 2 * bytes * iters over both ranks. The buffer's content is meaningless afterwards.
extern "C" __global__ void portBandwidth(PortChannelDeviceHandle ch, unsigned long long bytes, int iters,
                                         unsigned long long* elapsedNs) {
  if (threadIdx.x != 0 || blockIdx.x != 0) {
    return;
  }
  unsigned long long start = jmscclpp::globalTimerNs();
  for (int i = 0; i < iters; i++) {
    ch.putWithSignal(0, 0, bytes);
    ch.wait();
  }
  ch.flush();
  *elapsedNs = jmscclpp::globalTimerNs() - start;
}
