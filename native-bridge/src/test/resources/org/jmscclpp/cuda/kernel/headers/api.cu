// Compile-only coverage of the device API: includes jmscclpp.cuh alone and instantiates every
// function and template of it, so that a header change that breaks a rarely used verb fails
// DeviceHeadersCompileTest (and the NVRTC check) rather than the first kernel that needs it.
// reduce.cuh's templates (every type times every op) have a file of their own,
// reduce/reduce_kernels.cu, compiled by ReduceHeaderCrossCheckTest. Never launched.
#include "jmscclpp/jmscclpp.cuh"

namespace api {

using namespace jmscclpp;

// A 4-byte type with constructors: read<T> and write<T> take any trivially copyable type.
struct alignas(4) Pair16 {
  unsigned short low;
  unsigned short high;
  Pair16() = default;
  __device__ Pair16(unsigned short l, unsigned short h) : low(l), high(h) {}
};

template <typename T>
__device__ void readWrite(MemoryChannelDeviceHandle& ch, T* sink) {
  T v = ch.read<T>(1);
  ch.write<T>(2, v);
  *sink = v;
}

template <typename Packet>
__device__ void packets(MemoryChannelDeviceHandle& ch, void* data, void* buffer, u64 bytes, u32 flag) {
  ch.putPackets<Packet>(16, 8, bytes, threadIdx.x, blockDim.x, flag);
  ch.unpackPackets<Packet>(16, 8, bytes, threadIdx.x, blockDim.x, flag);
  ch.unpackPackets<Packet>(16, 8, bytes, threadIdx.x, blockDim.x, flag, 1000);
  copyToPackets<Packet>(buffer, data, bytes, threadIdx.x, blockDim.x, flag);
  copyFromPackets<Packet>(data, buffer, bytes, threadIdx.x, blockDim.x, flag);
  Deadline deadline(1000);
  copyFromPackets<Packet>(data, buffer, bytes, threadIdx.x, blockDim.x, flag, deadline);
  clearPackets<Packet>(buffer, bytes, threadIdx.x, blockDim.x);
  Packet* p = static_cast<Packet*>(buffer);
  typename Packet::Payload payload;
  if (p->readOnce(flag, payload)) {
    p->write(payload, flag + 1);
  }
  payload = p->read(flag);
  payload = p->read(flag, 1000);
  payload = p->read(flag, deadline);
  p->write(payload, flag);
  p->clear();
}

}  // namespace api

extern "C" __global__ void apiAtomics(unsigned long long* words, unsigned long long* out) {
  using namespace jmscclpp;
  u64 v = loadAcquireSys(words) + loadRelaxedSys(words + 1);
  storeReleaseSys(words + 2, v);
  storeRelaxedSys(words + 3, v);
  v += fetchAddRelaxedGpu(words + 4, 1);
  v += loadRelaxedGpu(words + 4) + casRelaxedGpu(words + 4, v, v + 1);
  maxRelaxedGpu(words + 5, v);
  addReleaseSys(words + 6, 1);
  addRelaxedSys(words + 7, 1);
  Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS);
  if (deadline.expired()) {
    JMSCCLPP_FAIL("apiAtomics: a fresh deadline expired");
  }
  *out = v + globalTimerNs();
}

extern "C" __global__ void apiTrigger(unsigned long long* out) {
  using namespace jmscclpp;
  ProxyTrigger raw(1, 2);
  ProxyTrigger t(TriggerData | TriggerFlag | TriggerSync, TriggerMaxMemoryId, 0xFFFFFFFFULL, 3, 4, 5,
                 TriggerMaxSemaphoreId);
  out[0] = t.fst ^ raw.fst;
  out[1] = t.snd ^ raw.snd;
  out[2] = t.size() + t.srcOffset() + t.dstOffset() + t.srcMemoryId() + t.dstMemoryId() + t.type() + t.semaphoreId();
}

extern "C" __global__ void apiFifo(jmscclpp::FifoDeviceHandle fifo, unsigned long long* out) {
  using namespace jmscclpp;
  u64 a = fifo.push(ProxyTrigger(1, 1));
  u64 b = fifo.push(ProxyTrigger(2, 2), 1000);
  Deadline deadline(1000);
  u64 c = fifo.push(ProxyTrigger(3, 3), deadline);
  fifo.sync(a);
  fifo.sync(b, 1000);
  fifo.sync(c, deadline);
  u64 d = 0;
  FifoPushStatus s = fifo.tryPush(ProxyTrigger(4, 4), &d);
  s = s == FifoPushed ? fifo.tryPush(ProxyTrigger(5, 5), &d, 1000) : s;
  s = s == FifoPushed ? fifo.tryPush(ProxyTrigger(6, 6), deadline, &d) : s;
  out[0] = fifo.proxyState() + (fifo.proxyGone() ? 1 : 0);
  out[1] = d + (s == FifoPushTimedOut ? 1 : 0) + (s == FifoPushProxyGone ? 2 : 0);
}

extern "C" __global__ void apiSemaphores(jmscclpp::Host2DeviceSemaphoreDeviceHandle h2d,
                                         jmscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle d2d, int* out) {
  h2d.wait();
  h2d.wait(1000);
  h2d.relaxedWait();
  h2d.relaxedWait(1000);
  d2d.signal();
  d2d.relaxedSignal();
  d2d.wait();
  d2d.wait(1000);
  d2d.relaxedWait();
  d2d.relaxedWait(1000);
  *out = (h2d.poll() ? 1 : 0) + (d2d.poll() ? 2 : 0);
}

extern "C" __global__ void apiPortChannel(jmscclpp::PortChannelDeviceHandle ch, unsigned long long* out) {
  using namespace jmscclpp;
  u64 p = ch.put(8, 16, 32);
  p += ch.put(8, 32);
  p += ch.signal();
  p += ch.putWithSignal(8, 16, 32);
  p += ch.putWithSignal(8, 32);
  ch.putWithSignalAndFlush(8, 16, 32);
  ch.putWithSignalAndFlush(8, 16, 32, 1000);
  ch.putWithSignalAndFlush(8, 32);
  ch.flush();
  ch.flush(1000);
  ch.wait();
  ch.wait(1000);
  ProxyTrigger t = ch.trigger(TriggerData, 1, 2, 3);
  out[0] = p + t.fst + (ch.poll() ? 1 : 0);
}

extern "C" __global__ void apiMemoryChannel(jmscclpp::MemoryChannelDeviceHandle ch, void* data, void* buffer,
                                            char* c, short* s, int* i, float* f, long long* l, double* d,
                                            uint2* u2, int4* i4, uint4* u4) {
  using namespace jmscclpp;
  ch.put(8, 24, 100, threadIdx.x, blockDim.x);
  ch.put(8, 100, threadIdx.x, blockDim.x);
  ch.put(8, 24, 100);
  ch.put(8, 100);
  ch.get(8, 24, 100, threadIdx.x, blockDim.x);
  ch.get(8, 100, threadIdx.x, blockDim.x);
  ch.get(8, 24, 100);
  ch.get(8, 100);
  copy(data, buffer, 100, threadIdx.x, blockDim.x);
  api::readWrite(ch, c);
  api::readWrite(ch, s);
  api::readWrite(ch, i);
  api::readWrite(ch, f);
  api::readWrite(ch, l);
  api::readWrite(ch, d);
  api::readWrite(ch, u2);
  api::readWrite(ch, i4);
  api::readWrite(ch, u4);
  api::Pair16 pair(1, 2);
  ch.write<api::Pair16>(3, pair);
  pair = ch.read<api::Pair16>(3);
  *i += pair.low + pair.high;
  api::packets<LL16Packet>(ch, data, buffer, 64, 1);
  api::packets<LL8Packet>(ch, data, buffer, 64, 1);
  LL16Packet* p16 = static_cast<LL16Packet*>(buffer);
  p16->write(1u, 2u, 3u);
  p16->write(0x0000000200000001ULL, 3u);
  ch.signal();
  ch.relaxedSignal();
  ch.wait();
  ch.wait(1000);
  ch.relaxedWait();
  ch.relaxedWait(1000);
  *i = ch.poll() ? 1 : 0;
}

// Every wait that takes an AbortFlag (DeviceAbortFlag's word): they return false instead of
// trapping; each result is folded into *ok so that none is optimised away.
extern "C" __global__ void apiAbort(jmscclpp::AbortFlag abort, jmscclpp::Host2DeviceSemaphoreDeviceHandle h2d,
                                    jmscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle d2d,
                                    jmscclpp::PortChannelDeviceHandle port, jmscclpp::MemoryChannelDeviceHandle mem,
                                    void* data, int* ok) {
  using namespace jmscclpp;
  bool all = true;
  all &= h2d.wait(abort);
  all &= h2d.relaxedWait(abort, 1000);
  all &= d2d.wait(abort);
  all &= d2d.relaxedWait(abort, 1000);
  Deadline shared(1000, abort);
  all &= d2d.wait(shared);
  all &= mem.wait(abort);
  all &= mem.relaxedWait(abort, 1000);
  all &= mem.unpackPackets<LL16Packet>(16, 8, 64, threadIdx.x, blockDim.x, 1u, abort);
  all &= mem.unpackPackets<LL8Packet>(16, 8, 64, threadIdx.x, blockDim.x, 1u, abort, 1000);
  all &= copyFromPackets<LL16Packet>(data, mem.packetBuffer, 64, threadIdx.x, blockDim.x, 1u, abort);
  bool got = false;
  static_cast<const LL16Packet*>(mem.packetBuffer)->read(1u, abort, got);
  all &= got;
  static_cast<const LL8Packet*>(mem.packetBuffer)->read(1u, abort, got, 1000);
  all &= got;
  all &= port.put(0, 8, 64, abort) != FifoPushFailed;
  all &= port.signal(abort) != FifoPushFailed;
  all &= port.putWithSignal(0, 8, 64, abort) != FifoPushFailed;
  all &= port.flush(abort);
  all &= port.flush(abort, 1000);
  all &= port.putWithSignalAndFlush(0, 8, 64, abort);
  all &= port.wait(abort, 1000);
  u64 pos = port.fifo.push(port.trigger(TriggerData, 0, 0, 8), abort);
  all &= port.fifo.sync(pos, abort);
  all &= !abort.raised();
  abort.raise(AbortTimeout);
  *ok = all ? static_cast<int>(abort.status()) : -1;
}
