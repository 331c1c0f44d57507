// jmscclpp device API: memory accesses with explicit scope and order, the clock, deadlines.
// The Java side of these words is org.jmscclpp.core.spi.Tokens (acquire/release/opaque accesses of
// 64-bit words); every other header builds its protocol on the functions here.
//
// Self-contained on purpose: no system or CUDA header is included, so the headers compile under
// NVRTC with only this include root.
#ifndef JMSCCLPP_ATOMICS_CUH_
#define JMSCCLPP_ATOMICS_CUH_

// How long any wait of the device API spins before it gives up and stops the kernel, in
// nanoseconds of %globaltimer. Define it before including the headers to change it.
#ifndef JMSCCLPP_DEVICE_TIMEOUT_NS
#define JMSCCLPP_DEVICE_TIMEOUT_NS 10000000000ULL
#endif

// Stops the kernel with a message naming the wait that failed; see jmscclpp::fail.
#define JMSCCLPP_FAIL(message) ::jmscclpp::fail(message, __FILE__, __LINE__, __func__)

#if !defined(__CUDACC_RTC__)
// The device-side assertion handler that assert() lowers to. NVRTC declares it; nvcc's headers
// declare only the host C library's __assert_fail, which device code cannot call by name.
extern "C" __device__ void __assertfail(const char* message, const char* file, unsigned int line,
                                        const char* function, decltype(sizeof(0)) charSize);
#endif

namespace jmscclpp {

typedef unsigned long long u64;
typedef unsigned int u32;

// ------------------------------------------------------------------------------------------------
// Loads and stores of 64-bit words shared with other agents.
//
// The peer of a word is a host thread (the proxy, reading and writing pinned host memory across
// PCIe) or another GPU (through NVLink mappings of CUDA IPC memory): hence the .sys scope on every
// access that synchronises with it. Plain loads would be hoisted out of spin loops, and gpu scope
// would not order them against agents outside this GPU.

// Load that later loads cannot overtake: once it returns a value the peer stored with release,
// everything the peer wrote before that store is visible to this thread.
__forceinline__ __device__ u64 loadAcquireSys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Atomic load with no ordering: a fresh value each call (never cached in a register), for
// words whose value alone matters.
__forceinline__ __device__ u64 loadRelaxedSys(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Store that earlier accesses cannot overtake: a peer that acquires the value sees them.
__forceinline__ __device__ void storeReleaseSys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Atomic store with no ordering.
__forceinline__ __device__ void storeRelaxedSys(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Adds v to *p and returns the old value; relaxed, device scope: for counters that only the
// threads of this GPU update.
__forceinline__ __device__ u64 fetchAddRelaxedGpu(u64* p, u64 v) {
  return atomicAdd(p, v);
}

// Atomic load with no ordering, device scope: a fresh value each call, for words that only the
// threads of this GPU write (a GPU fifo's head lives in this GPU's memory).
__forceinline__ __device__ u64 loadRelaxedGpu(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Stores desired into *p if it holds expected; returns the value *p held (expected exactly when
// it stored). Relaxed, device scope, like fetchAddRelaxedGpu.
__forceinline__ __device__ u64 casRelaxedGpu(u64* p, u64 expected, u64 desired) {
  return atomicCAS(p, expected, desired);
}

// Raises *p to at least v; relaxed, device scope (a GPU fifo's tail cache).
__forceinline__ __device__ void maxRelaxedGpu(u64* p, u64 v) {
  atomicMax(p, v);
}

// Adds v to *p without reading it back, after every earlier access of this thread (and, since
// release is cumulative, every access this thread has observed, such as those of the block
// ordered before it by __syncthreads). The peer's acquire load of *p then sees them.
__forceinline__ __device__ void addReleaseSys(u64* p, u64 v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Adds v to *p without ordering anything.
__forceinline__ __device__ void addRelaxedSys(u64* p, u64 v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ------------------------------------------------------------------------------------------------
// Time and deadlines

// Nanoseconds of the GPU's global timer: comparable across the SMs of one GPU, not across GPUs.
__forceinline__ __device__ u64 globalTimerNs() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The end of a wait. The clock starts at the first call of expired(), so a wait whose condition
// already holds never reads the timer: deadlines cost the fast path nothing.
struct Deadline {
  u64 timeoutNs;
  u64 end;
  bool started;

  __forceinline__ __device__ explicit Deadline(u64 timeoutNs) : timeoutNs(timeoutNs), end(0), started(false) {}

  // Whether the deadline has passed; the first call starts the clock and answers false.
  __forceinline__ __device__ bool expired() {
    u64 now = globalTimerNs();
    if (!started) {
      started = true;
      // saturated: a timeout of centuries must not wrap around to the past
      end = timeoutNs > ~0ULL - now ? ~0ULL : now + timeoutNs;
      return false;
    }
    return now >= end;
  }
};

// ------------------------------------------------------------------------------------------------
// Failure

// Stops the kernel: a device-side assertion failure carrying `message`, which the driver prints
// with the file, line, function, block and thread, and which ends the launch with
// CUDA_ERROR_ASSERT (the context is unusable afterwards, as after any trap). Every wait of the
// device API ends here at its deadline, or when the proxy it waits for has stopped or failed,
// instead of spinning forever as MSCCL++'s release builds do.
__forceinline__ __device__ void fail(const char* message, const char* file, unsigned line, const char* function) {
  __assertfail(message, file, line, function, 1);
  // not reached; stops the kernel even where the assertion handler returns
  __trap();
}

}  // namespace jmscclpp

#endif  // JMSCCLPP_ATOMICS_CUH_
