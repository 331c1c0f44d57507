// jmscclpp device API: memory accesses with explicit scope and order, the clock, deadlines.
// The Java side of these words is org.jmscclpp.core.spi.Tokens (acquire/release/opaque accesses of
// 64-bit words); every other header builds its protocol on the functions here.
//
// Self-contained on purpose: no system or CUDA header is included, so the headers compile under
// NVRTC with only this include root.
#ifndef JMSCCLPP_ATOMICS_CUH_
#define JMSCCLPP_ATOMICS_CUH_

// How long any wait of the device API spins before it gives up, in nanoseconds of %globaltimer:
// it then stops the kernel, or, given an AbortFlag, raises the flag and returns false. Define it
// before including the headers to change it.
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

// ------------------------------------------------------------------------------------------------
// The abort word (org.jmscclpp.cuda.kernel.DeviceAbortFlag)
//
// A 64-bit word in pinned host memory mapped into the GPU, one per flag the host made for a
// communicator: 0 while the job runs; the host stores AbortRaised when the communicator's
// AbortSignal is raised (a dead peer, an abort on any rank), and a device wait given the flag
// stores AbortTimeout or AbortProxyGone when it gives up, so that every other wait given the same
// flag ends too. Waits given a flag look at the word every JMSCCLPP_ABORT_CHECK_NS of spinning
// (never on the fast path: a wait whose condition holds at once, or soon, reads only its own
// words), and on finding it set return false instead of stopping the kernel; so does a wait that
// passes its deadline, or whose proxy is gone, after setting the word. The kernel then returns
// with garbage results, which nobody uses, and the CUDA context stays usable.

constexpr u64 AbortNone = 0;       // the job runs
constexpr u64 AbortRaised = 1;     // the host raised the communicator's abort signal
constexpr u64 AbortTimeout = 2;    // a device wait given the flag passed its deadline
constexpr u64 AbortProxyGone = 3;  // a device wait given the flag found its proxy stopped or failed

// How often, in nanoseconds of spinning, a wait given an abort flag reads the word (a PCIe read).
// Every waiting thread reads it: at 20 µs the reads of the ll16 collectives' thousands of threads
// made allreduce of 256 KiB to 1 MiB 2-5x slower on H100 (83 and 141 µs against 46 and 32 µs);
// at 1 ms they cost nothing measurable and an abort still ends a kernel within about a millisecond.
#ifndef JMSCCLPP_ABORT_CHECK_NS
#define JMSCCLPP_ABORT_CHECK_NS 1000000ULL
#endif

// A communicator's abort word as kernels get it: 8 bytes, passed by value as a kernel parameter
// (the host passes DeviceAbortFlag#address()) or kept in a structure of the kernel's own. A null
// word is no flag: waits given it stop the kernel at their deadline, as waits without one do.
struct AbortFlag {
  u64* word;

  // The word's value (AbortNone while the job runs); one read of host memory.
  __forceinline__ __device__ u64 status() const { return word == nullptr ? AbortNone : loadRelaxedSys(word); }

  // Whether the job was aborted, or a wait given this flag gave up.
  __forceinline__ __device__ bool raised() const { return status() != AbortNone; }

  // Stores `code` unless the word holds a code already (a race between two first codes keeps one
  // of them: both say the job is over). System scope: the host and the other blocks read it.
  __forceinline__ __device__ void raise(u64 code) const {
    if (word != nullptr && loadRelaxedSys(word) == AbortNone) {
      storeRelaxedSys(word, code);
      __threadfence_system();
    }
  }
};

// The end of a wait: its deadline and, optionally, the abort flag it also ends on. The clock
// starts at the first call of expired(), so a wait whose condition already holds never reads the
// timer: deadlines cost the fast path nothing. Once expired() answered true it keeps answering
// true, so the later waits of a thread that share one Deadline (a loop of packet reads) end at
// once.
struct Deadline {
  u64 timeoutNs;
  u64 end;
  u64 nextAbortCheck;
  u64* abortWord;
  bool started;
  bool over;
  bool aborted;

  __forceinline__ __device__ explicit Deadline(u64 timeoutNs, AbortFlag abort = AbortFlag{nullptr})
      : timeoutNs(timeoutNs), end(0), nextAbortCheck(0), abortWord(abort.word), started(false), over(false),
        aborted(false) {}

  // Whether the wait must end: the deadline passed, or the abort word is set (looked at every
  // JMSCCLPP_ABORT_CHECK_NS). The first call starts the clock and answers false.
  __forceinline__ __device__ bool expired() {
    if (over) {
      return true;
    }
    u64 now = globalTimerNs();
    if (!started) {
      started = true;
      // saturated: a timeout of centuries must not wrap around to the past
      end = timeoutNs > ~0ULL - now ? ~0ULL : now + timeoutNs;
      nextAbortCheck = now + JMSCCLPP_ABORT_CHECK_NS;
      return false;
    }
    if (abortWord != nullptr && now >= nextAbortCheck) {
      nextAbortCheck = now + JMSCCLPP_ABORT_CHECK_NS;
      if (loadRelaxedSys(abortWord) != AbortNone) {
        over = true;
        aborted = true;
        return true;
      }
    }
    if (now >= end) {
      over = true;
    }
    return over;
  }

  // Whether this deadline's waits gave up (expired, aborted, or a proxy gone): their results are
  // garbage.
  __forceinline__ __device__ bool failed() const { return over; }

  // Whether a wait may return instead of stopping the kernel: it was given an abort flag.
  __forceinline__ __device__ bool abortable() const { return abortWord != nullptr; }

  // Ends a wait that cannot succeed: `code` says why (AbortTimeout past the deadline,
  // AbortProxyGone when its proxy stopped; ignored when the word was found set). With an abort
  // flag, stores the code into the word (every other wait given the flag then ends too) and
  // returns false; without one, stops the kernel with `message` (see fail()).
  __forceinline__ __device__ bool giveUp(u64 code, const char* message, const char* file, unsigned line,
                                         const char* function);
};

// ------------------------------------------------------------------------------------------------
// Failure

// Stops the kernel: a device-side assertion failure carrying `message`, which the driver prints
// with the file, line, function, block and thread, and which ends the launch with
// CUDA_ERROR_ASSERT (the context is unusable afterwards, as after any trap). Every wait of the
// device API that was given no abort flag ends here at its deadline, or when the proxy it waits
// for has stopped or failed, instead of spinning forever as MSCCL++'s release builds do; waits
// given a flag return instead (Deadline::giveUp).
__forceinline__ __device__ void fail(const char* message, const char* file, unsigned line, const char* function) {
  __assertfail(message, file, line, function, 1);
  // not reached; stops the kernel even where the assertion handler returns
  __trap();
}

__forceinline__ __device__ bool Deadline::giveUp(u64 code, const char* message, const char* file, unsigned line,
                                                 const char* function) {
  over = true;
  if (abortWord == nullptr) {
    fail(message, file, line, function);
    return false;
  }
  if (!aborted) {
    AbortFlag{abortWord}.raise(code);
  }
  return false;
}

// Deadline::giveUp naming the calling line.
#define JMSCCLPP_GIVE_UP(deadline, code, message) (deadline).giveUp(code, message, __FILE__, __LINE__, __func__)

}  // namespace jmscclpp

#endif  // JMSCCLPP_ATOMICS_CUH_
