// GPU test and benchmark kernels for memory channels (MSCCL++'s MemoryChannelOneToOneTest), for
// two ranks whose memory is mapped in each other through CUDA IPC. Handles are passed by value:
// the host passes the bytes of MemoryChannel#encodeDeviceHandle as the parameter. Launch each
// with one block of up to 1024 threads.
//
//   memPutPingPong(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters, int* errors)
//   memGetPingPong(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters, int* errors)
//   llPingPong16(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters, int* errors,
//                unsigned long long* elapsedNs)
//   llPingPong8(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters, int* errors,
//               unsigned long long* elapsedNs)
//
// The channels: for memPutPingPong and memGetPingPong an in-place channel (each rank exposes its
// buffer, and uses it as src: MemoryChannel.build(comm, connection, buffer)), buf being this
// rank's buffer (the channel's src). For the packet kernels each rank exposes its packet buffer
// (at least 2 * nElem * 4 bytes; 16-byte aligned) and uses buf as src: dst is the peer's packet
// buffer, packetBuffer this rank's. In iteration i the writer is the rank with rank == i mod 2;
// every wait ends at JMSCCLPP_DEVICE_TIMEOUT_NS by stopping the kernel (CUDA_ERROR_ASSERT).
#include "jmscclpp/jmscclpp.cuh"

using jmscclpp::LL16Packet;
using jmscclpp::LL8Packet;
using jmscclpp::MemoryChannelDeviceHandle;

namespace {

__device__ void checkArguments(int rank, int nElem, const char* rankMessage, const char* nElemMessage) {
  if (rank != 0 && rank != 1) {
    JMSCCLPP_FAIL(rankMessage);
  }
  if (nElem < 0) {
    JMSCCLPP_FAIL(nElemMessage);
  }
}

__device__ void fill(int* buf, int nElem, int value) {
  for (int j = threadIdx.x; j < nElem; j += blockDim.x) {
    buf[j] = value + j;
  }
}

__device__ int countMismatches(const int* buf, int nElem, int value) {
  int mismatches = 0;
  for (int j = threadIdx.x; j < nElem; j += blockDim.x) {
    if (buf[j] != value + j) {
      mismatches++;
    }
  }
  return mismatches;
}

// LL ping-pong shared by both packet formats. The packet buffer is reused every iteration: the
// flag (i + 1) tells this round's packets from older ones, and the alternation guarantees that a
// rank rewrites the peer's packets only after the peer read them (it read them before it wrote
// the packets this rank waited for).
template <typename Packet>
__device__ void llPingPong(MemoryChannelDeviceHandle& ch, int* buf, int nElem, int rank, int iters, int* errors,
                           unsigned long long* elapsedNs) {
  unsigned long long bytes = static_cast<unsigned long long>(nElem) * sizeof(int);
  int mismatches = 0;
  unsigned long long start = jmscclpp::globalTimerNs();
  for (int i = 0; i < iters; i++) {
    unsigned int flag = static_cast<unsigned int>(i) + 1;
    if (((rank ^ i) & 1) == 0) {
      fill(buf, nElem, i);
      // a packet's payload may come from ints other threads wrote
      __syncthreads();
      ch.putPackets<Packet>(0, 0, bytes, threadIdx.x, blockDim.x, flag);
    } else {
      ch.unpackPackets<Packet>(0, 0, bytes, threadIdx.x, blockDim.x, flag);
      // ... and land in ints other threads check
      __syncthreads();
      mismatches += countMismatches(buf, nElem, i);
    }
    // the next iteration's writer overwrites buf: every thread's check must be done
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *elapsedNs = jmscclpp::globalTimerNs() - start;
  }
  if (mismatches != 0) {
    atomicAdd(errors, mismatches);
  }
  // The peer wrote its last packets into this rank's buffer and they were all read: zero them,
  // so that the next launch, whose flags start at 1 again, cannot take them for its own.
  jmscclpp::clearPackets<Packet>(ch.packetBuffer, bytes, threadIdx.x, blockDim.x);
}

}  // namespace

// Ping-pong with put: the writer fills its buffer with buf[j] = i + j, syncs the block, puts the
// nElem * 4 bytes into the peer's buffer with all threads, syncs again, and thread 0 signals. The
// reader's thread 0 waits, the block syncs, and every thread checks its share of
// buf[j] == i + j, adding its mismatches to *errors.
extern "C" __global__ void memPutPingPong(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters,
                                          int* errors) {
  if (blockIdx.x != 0) {
    return;
  }
  checkArguments(rank, nElem, "memPutPingPong: rank is 0 or 1", "memPutPingPong: nElem is negative");
  unsigned long long bytes = static_cast<unsigned long long>(nElem) * sizeof(int);
  int mismatches = 0;
  for (int i = 0; i < iters; i++) {
    if (((rank ^ i) & 1) == 0) {
      fill(buf, nElem, i);
      __syncthreads();
      ch.put(0, 0, bytes, threadIdx.x, blockDim.x);
      // the signal must follow every thread's stores into the peer's memory
      __syncthreads();
      if (threadIdx.x == 0) {
        ch.signal();
      }
    } else {
      if (threadIdx.x == 0) {
        ch.wait();
      }
      __syncthreads();
      mismatches += countMismatches(buf, nElem, i);
    }
    __syncthreads();
  }
  if (mismatches != 0) {
    atomicAdd(errors, mismatches);
  }
}

// Ping-pong with get: the writer fills its own buffer with buf[j] = i + j, syncs the block, and
// thread 0 signals. The reader's thread 0 waits, the block syncs, all threads get the nElem * 4
// bytes from the peer's buffer into buf, sync, and check their share of buf[j] == i + j, adding
// mismatches to *errors. The writer rewrites its buffer two iterations later, after the reader's
// next signal, which the reader sends only after its get.
extern "C" __global__ void memGetPingPong(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters,
                                          int* errors) {
  if (blockIdx.x != 0) {
    return;
  }
  checkArguments(rank, nElem, "memGetPingPong: rank is 0 or 1", "memGetPingPong: nElem is negative");
  unsigned long long bytes = static_cast<unsigned long long>(nElem) * sizeof(int);
  int mismatches = 0;
  for (int i = 0; i < iters; i++) {
    if (((rank ^ i) & 1) == 0) {
      fill(buf, nElem, i);
      __syncthreads();
      if (threadIdx.x == 0) {
        ch.signal();
      }
    } else {
      if (threadIdx.x == 0) {
        ch.wait();
      }
      __syncthreads();
      ch.get(0, 0, bytes, threadIdx.x, blockDim.x);
      __syncthreads();
      mismatches += countMismatches(buf, nElem, i);
    }
    __syncthreads();
  }
  if (mismatches != 0) {
    atomicAdd(errors, mismatches);
  }
}

// LL16 ping-pong with putPackets and unpackPackets, flag i + 1 in iteration i: the writer fills
// buf[j] = i + j and packs it into the peer's packet buffer; the reader unpacks its packet buffer
// into buf and checks buf[j] == i + j, adding mismatches to *errors. nElem must be even (an LL16
// packet carries two ints). Thread 0 stores the %globaltimer nanoseconds of the loop into
// *elapsedNs (one iteration is one one-way transfer). Ends by zeroing this rank's packets, so
// the kernel may be launched again on the same buffers.
extern "C" __global__ void llPingPong16(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters,
                                        int* errors, unsigned long long* elapsedNs) {
  if (blockIdx.x != 0) {
    return;
  }
  checkArguments(rank, nElem, "llPingPong16: rank is 0 or 1", "llPingPong16: nElem is negative");
  if (nElem % 2 != 0) {
    JMSCCLPP_FAIL("llPingPong16: nElem must be even (an LL16 packet carries two ints)");
  }
  llPingPong<LL16Packet>(ch, buf, nElem, rank, iters, errors, elapsedNs);
}

// llPingPong16 with LL8 packets (one int each); nElem may be odd.
extern "C" __global__ void llPingPong8(MemoryChannelDeviceHandle ch, int* buf, int nElem, int rank, int iters,
                                       int* errors, unsigned long long* elapsedNs) {
  if (blockIdx.x != 0) {
    return;
  }
  checkArguments(rank, nElem, "llPingPong8: rank is 0 or 1", "llPingPong8: nElem is negative");
  llPingPong<LL8Packet>(ch, buf, nElem, rank, iters, errors, elapsedNs);
}
