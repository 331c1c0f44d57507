// The CUDA collective engine's kernels (org.jmscclpp.cuda.collective.CudaCollectiveComm): every
// collective of the API on the caller's buffers, for the GPUs of one host over CUDA IPC.
//
// Compiled per module with NVRTC, by the Java side, with these defines:
//   JMSCCLPP_NRANKS     the number of ranks, 1 to 8 (loops over ranks unroll)
//   JMSCCLPP_T, _OP     a reducing module: the data type and reduction (ncclDataType_t, ncclRedOp_t
//                       codes); it serves ALL_REDUCE, REDUCE_SCATTER and REDUCE
//   JMSCCLPP_MOVE       a moving module: ALL_GATHER, BROADCAST, ALL_TO_ALL and the point-to-point kernel
//   JMSCCLPP_DEVICE_TIMEOUT_NS  how long any wait spins before it gives up (see Abort below)
//
// Entry points:
//   collective(const Comm* comm, Call call)     one collective (or one staged piece of one)
//   pointToPoint(const Comm* comm, P2p p2p)     the sends and receives of one wave of a group
//
// Every collective kernel begins with the call's descriptor (org.jmscclpp.core.collective.CallDescriptor,
// four 64-bit words) sent to every peer as LL16 packets and compared with every peer's: ranks whose
// calls differ all stop before touching any data, set the communicator's failed word and (the first
// thread to see it) write the error record that the host turns into INVALID_USAGE. A failed
// communicator's kernels return at once. Getting a peer's descriptor of a run also means the peer's
// stream reached this run, so everything it did before on its buffers is done: direct kernels write
// into peers' buffers only after it.
//
// Abort: every wait is given the communicator's abort flag (Comm::abort, a word of pinned host
// memory: org.jmscclpp.cuda.kernel.DeviceAbortFlag, which the host sets when the communicator's
// AbortSignal is raised) and looks at it while it spins. A wait that finds it set, or that passes
// its deadline (it then stores AbortTimeout into it), returns instead of trapping; the thread marks
// the communicator aborted (failed = 2, so the kernels queued behind return at once) and ORs
// kAbortSeen into the word, and the kernel ends with garbage results and the CUDA context usable.
// The host fails every call that did not complete before kAbortSeen with the signal's cause (or
// TIMEOUT), a call whose kernels finished without needing the flag succeeds.
//
// Runs: every collective kernel is one run; `comm->runs` (device memory) counts them, in kRunWords
// equal words that each block reads at its start and the kernel advances at its end, so CUDA graph
// replays need nothing from the host. The run's parity picks the half of the descriptor and LL areas
// it writes: a rank writes half h of a peer's scratch two runs later only after it received the
// peer's descriptor of the run between, which the peer wrote after finishing the run before it.
//
// Algorithms (Call::algo):
//   0 LL      one shot: each rank sends what each peer needs as LL16 packets (8 bytes of payload and
//             a 32-bit flag twice) into the peer's LL area and computes its receive buffer from the
//             packets it gets; buffers are the caller's, at any alignment; no registration needed.
//   1 direct  peers' buffers are read or written in place after the descriptors: registered buffers
//             (Call::staged = 0, located through each peer's descriptor and the registration table)
//             or the communicator's staged areas (staged = 1: the host copied the send data into the
//             IN area before and copies the OUT area out after). Every block ends at a barrier with the
//             same block of every peer (a semaphore per block and peer), so when the kernel ends every
//             peer is done with this rank's buffers and has stored everything meant for it.
//   2 push    allReduce, reduce and broadcast on registered buffers with stores only, in rounds of
//             chunks with a handshake per round (the push section below); staged calls run direct.
//   3 ce      allGather, allToAll, broadcast and allReduce (two ranks, both out of place; else push)
//             on registered buffers: the GPU's copy engines move the bytes, started by the host's copy
//             proxy at the kernel's request (the copy engine section below); staged calls run direct.
//             Sends of algorithm ce into a registered receive buffer too (pointToPoint).
#include <jmscclpp/jmscclpp.cuh>

using jmscclpp::Deadline;
using jmscclpp::LL16Packet;
using jmscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle;
using jmscclpp::u32;
using jmscclpp::u64;

#ifndef JMSCCLPP_NRANKS
#error "JMSCCLPP_NRANKS must be defined"
#endif

namespace {

constexpr int N = JMSCCLPP_NRANKS;
constexpr int kMaxRanks = 8;
constexpr int kMaxPeers = kMaxRanks - 1;
constexpr int kThreads = 512;
constexpr u32 kRunWords = 128;
constexpr u32 kMaxBlocks = 128;  // CudaCollectiveComm.MAX_BLOCKS
constexpr u64 kFlagPeriod = 0xFFFFFFFEull;
constexpr int kMaxRegistrations = 4096;
constexpr int kMaxP2p = 32;

// kinds (CollectiveKind codes)
constexpr int kAllReduce = 1;
constexpr int kAllGather = 2;
constexpr int kReduceScatter = 3;
constexpr int kBroadcast = 4;
constexpr int kReduce = 5;
constexpr int kAllToAll = 6;

// error codes of the error record
constexpr u64 kMismatch = 1;
constexpr u64 kUnknownRegistration = 2;
constexpr u64 kP2pMismatch = 3;

// The bit a kernel ORs into the abort word once one of its waits gave up (DeviceAbortFlag.SEEN).
constexpr u64 kAbortSeen = 1ull << 8;

static_assert(N >= 1 && N <= kMaxRanks, "1 to 8 ranks");

// The communicator, built once by the Java side (CudaCollectiveComm's encoder writes these
// offsets), in device memory.
struct Comm {
  u64* runs;                                     //   0 kRunWords words
  u32* failed;                                   //   8 0 while healthy
  u64* error;                                    //  16 pinned, host-mapped: the error record
  char* scratch;                                 //  24 this rank's scratch
  char* peerScratch[kMaxPeers];                  //  32 peers' scratch mapped here, by peer index
  u64* regTable;                                 //  88 [kMaxRegistrations][kMaxPeers] mapped bases, 0 if none
  MemoryDevice2DeviceSemaphoreDeviceHandle* sems;  // 96 [kMaxBlocks][nPeers]: block b, peer i at b*nPeers+i
  u64* p2pCount;                                 // 104 [2][kMaxRanks]: sends to, receives from each rank
  u32* p2pDone;                                  // 112 [2][kMaxRanks] finished blocks of the running send, receive,
                                                 //     then [2][kMaxRanks] pieces of it still to skip (p2pRun)
  int rank;                                      // 120
  int nRanks;                                    // 124
  u64 offDesc;                                   // 128 [2][kMaxRanks] descriptors, 4 packets each
  u64 offP2pDesc;                                // 136 [2][kMaxRanks] boxes of senders: descriptor, done (5 packets)
  u64 offP2pReply;                               // 144 [2][kMaxRanks] boxes of receivers: descriptor, done (5 packets)
  u64 offLL;                                     // 152 [2][nRanks] slots of llSlotBytes
  u64 llSlotBytes;                               // 160
  u64 offIn;                                     // 168 the staged IN area
  u64 offOut;                                    // 176 the staged OUT area
  u64 stagedBytes;                               // 184 bytes of each staged area; after OUT lie the inline
                                                 //     areas: [nRanks][2] of kP2pInlineSlot
  u64* abort;                                    // 192 pinned, host-mapped: the abort word (DeviceAbortFlag)
  u64* ceRing;                                   // 200 pinned, host-mapped: the copy proxy's requests (ceRun)
  u64* ceHead;                                   // 208 requests posted so far, then [kMaxBlocks] each block's
                                                 //     progress in a ce allReduce (device memory)
};
static_assert(sizeof(Comm) == 216, "CudaCollectiveComm.COMM_BYTES");

// How a kernel tells the host that the call it ends is over (tellHost), passed by value.
struct Done {
  u64* word;   // 0 pinned host memory, a word per block, each written with value when its block ends; or null
  u64 value;   // 8
  u32 system;  // 16 1: one of the call's buffers is host memory, which host threads may read at once
  u32 pad;     // 20
};

// One collective, passed by value.
struct Call {
  u64 desc[4];       //  0 this rank's descriptor
  const char* send;  // 32 this rank's send data (staged: its IN area)
  char* recv;        // 40 this rank's receive buffer (staged: its OUT area)
  u64 count;         // 48 elements in CollectiveKind's sense (staged: this piece's)
  int kind;          // 56
  int algo;          // 60 0 LL, 1 direct, 2 push, 3 ce
  int root;          // 64
  int inPlace;       // 68 NCCL's in-place form (never when staged)
  int staged;        // 72
  int elementBytes;  // 76
  Done done;         // 80
};
static_assert(sizeof(Call) == 104, "CudaCollectiveComm.CALL_BYTES");

__forceinline__ __device__ int peerIndex(int q, int rank) { return q < rank ? q : q - 1; }
__forceinline__ __device__ int peerRank(int i, int rank) { return i < rank ? i : i + 1; }
// The ranks other than the root, numbered 0 to N - 2 from the one after it.
__forceinline__ __device__ int nonRootIndex(int rank, int root) { return (rank - root - 1 + N) % N; }
__forceinline__ __device__ u64 gtid() { return static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; }
__forceinline__ __device__ u64 gthreads() { return static_cast<u64>(gridDim.x) * blockDim.x; }
__forceinline__ __device__ bool aligned(const void* p, u64 a) { return (reinterpret_cast<u64>(p) & (a - 1)) == 0; }

// ---------------------------------------------------------------------------------------------
// failure

// Marks the communicator failed; the first caller writes the error record (code, peer, this rank's
// descriptor, the peer's, run) for the host, which reads it once the stream got this far.
__device__ void fail(const Comm* c, u64 code, int peer, const u64* mine, const u64* theirs, u64 run) {
  if (atomicCAS(c->failed, 0u, 1u) == 0u) {
    u64* e = c->error;
    e[1] = static_cast<u64>(peer);
    for (int k = 0; k < 4; k++) {
      e[2 + k] = mine[k];
      e[6 + k] = theirs == nullptr ? 0 : theirs[k];
    }
    e[10] = run;
    __threadfence_system();
    jmscclpp::storeReleaseSys(e, code);
  }
}

// The communicator's abort flag, for the waits.
__forceinline__ __device__ jmscclpp::AbortFlag abortFlag(const Comm* c) { return jmscclpp::AbortFlag{c->abort}; }

// A wait of this thread gave up (the job was aborted, or a deadline passed and raised the flag):
// marks the communicator aborted, so that the kernels queued behind this one return at once, and
// tells the host that a kernel ended early (kAbortSeen).
__device__ void stopOnAbort(const Comm* c) {
  atomicExch(c->failed, 2u);
  if (c->abort == nullptr) {
    return;
  }
  u64 w = jmscclpp::loadRelaxedSys(c->abort);
  if ((w & kAbortSeen) == 0) {
    jmscclpp::storeRelaxedSys(c->abort, (w == 0 ? jmscclpp::AbortTimeout : w) | kAbortSeen);
  }
  __threadfence_system();
}

// ---------------------------------------------------------------------------------------------
// payload of LL16 packets: 8 bytes at a time, any alignment, never past the end

__forceinline__ __device__ uint2 loadPayload(const char* p, u64 bytes, u64 i, bool aligned8) {
  u64 at = i * 8;
  if (aligned8 && at + 8 <= bytes) {
    return reinterpret_cast<const uint2*>(p)[i];
  }
  u32 w[2] = {0, 0};
  u64 n = bytes - at < 8 ? bytes - at : 8;
  for (u64 k = 0; k < n; k++) {
    w[k / 4] |= static_cast<u32>(static_cast<unsigned char>(p[at + k])) << (8 * (k % 4));
  }
  return make_uint2(w[0], w[1]);
}

__forceinline__ __device__ void storePayload(char* p, u64 bytes, u64 i, uint2 v, bool aligned8) {
  u64 at = i * 8;
  if (aligned8 && at + 8 <= bytes) {
    reinterpret_cast<uint2*>(p)[i] = v;
    return;
  }
  u32 w[2] = {v.x, v.y};
  u64 n = bytes - at < 8 ? bytes - at : 8;
  for (u64 k = 0; k < n; k++) {
    p[at + k] = static_cast<char>(w[k / 4] >> (8 * (k % 4)));
  }
}

__forceinline__ __device__ LL16Packet* packets(char* base) { return reinterpret_cast<LL16Packet*>(base); }

// Writes `bytes` of `src` as packets into `to`: thread tid of nThreads writes packets tid, tid + nThreads, ...
__device__ void toPackets(LL16Packet* to, u32 flag, const char* src, u64 bytes, u64 tid, u64 nThreads) {
  const u64 nPackets = (bytes + 7) / 8;
  const bool a8 = aligned(src, 8);
  for (u64 k = tid; k < nPackets; k += nThreads) {
    to[k].write(loadPayload(src, bytes, k, a8), flag);
  }
}

// Stores the payload of the packets `from` (`bytes` of it) into `out`, spread over threads as toPackets
// writes them; stops at the first wait that gives up, leaving deadline.failed() set.
__device__ void fromPackets(const LL16Packet* from, u32 flag, char* out, u64 bytes, u64 tid, u64 nThreads,
                            Deadline& deadline) {
  const u64 nPackets = (bytes + 7) / 8;
  const bool a8 = aligned(out, 8);
  for (u64 k = tid; k < nPackets; k += nThreads) {
    uint2 v = from[k].read(flag, deadline);
    if (deadline.failed()) {
      return;
    }
    storePayload(out, bytes, k, v, a8);
  }
}

// ---------------------------------------------------------------------------------------------
// descriptors

__forceinline__ __device__ char* descSlot(char* scratch, const Comm* c, u64 half, int from) {
  return scratch + c->offDesc + (half * kMaxRanks + from) * 4 * sizeof(LL16Packet);
}

// The box of point-to-point messages (the point-to-point section below) that rank `from` writes into
// for its messages of parity `half`: its descriptor and, for the end that waits, "done".
constexpr u64 kP2pBoxPackets = 5;  // 4 for the descriptor, 1 for "done" (status in x)

__device__ char* p2pBox(char* scratch, const Comm* c, bool fromSender, int from, u64 half) {
  return scratch + (fromSender ? c->offP2pDesc : c->offP2pReply) +
         (half * kMaxRanks + static_cast<u64>(from)) * kP2pBoxPackets * 16;
}

// Crossed calls: a rank in a send or receive with a peer that is in a collective, or the reverse,
// waits for a descriptor the other never writes (NCCL hangs there). A descriptor wait that lasted
// kCrossingLookNs also looks for the other kind's: the peer's descriptor of its next message with
// this rank (a pair's message numbers are in step), or of this rank's next collective run (the runs
// are in step). Seeing one is not yet a crossing: a peer that did the awaited call and went on writes
// the next call's descriptor after this one's, and the wait goes on for kCrossingGraceNs; if the
// awaited descriptor still does not come, the calls crossed, and both ends fail with INVALID_USAGE
// naming the two calls. A point-to-point end that finds itself crossed also writes its descriptor as
// its collective one for the run, so that the other ranks of that collective fail on the mismatch at
// once instead of at their deadline (the host engine's HostCollectiveComm does the same).
constexpr u64 kCrossingLookNs = 20000;
constexpr u64 kCrossingGraceNs = 5000000;

// Waits until `awaited` carries `flag` (its payload in `out`): returns 0. Returns 1 + j where
// others[j] carried otherFlags[j] and `awaited` did not come within kCrossingGraceNs after that, or
// -1 when the wait gave up (deadline.failed()).
__device__ int awaitUnlessCrossed(const LL16Packet* awaited, u32 flag, const LL16Packet* const* others,
                                  const u32* otherFlags, int nOthers, Deadline& deadline, uint2& out) {
  u64 start = 0;
  u64 seenAt = 0;
  int seen = -1;
  for (;;) {
    if (awaited->readOnce(flag, out)) {
      return 0;
    }
    if (deadline.expired()) {
      if (!deadline.aborted) {
        JMSCCLPP_GIVE_UP(deadline, jmscclpp::AbortTimeout, "descriptor wait: the peer's descriptor did not arrive"
                                                           " before the deadline");
      }
      return -1;
    }
    const u64 now = jmscclpp::globalTimerNs();
    if (start == 0) {
      start = now;
    } else if (seen >= 0) {
      if (now - seenAt >= kCrossingGraceNs) {
        return 1 + seen;
      }
    } else if (now - start >= kCrossingLookNs) {
      for (int j = 0; j < nOthers; j++) {
        uint2 ignored;
        if (others[j]->readOnce(otherFlags[j], ignored)) {
          seen = j;
          seenAt = now;
          break;
        }
      }
    }
  }
}

// The descriptor in the four packets at `from` (flag), into `words`.
__device__ void readDescriptor(const LL16Packet* from, u32 flag, u64* words, Deadline& deadline) {
  for (int k = 0; k < 4; k++) {
    uint2 v = from[k].read(flag, deadline);
    words[k] = static_cast<u64>(v.x) | static_cast<u64>(v.y) << 32;
  }
}

// Block 0 sends this rank's descriptor to every peer; every block then reads every peer's into
// `peers` (shared) and compares words 0 and 1 with its own. Returns false (after fail()) when a
// peer differs; every rank sees every difference, so all ranks stop at the same run.
__device__ bool exchangeDescriptors(const Comm* c, const Call& call, u64 run, u32 flag, u64 (*peers)[4]) {
  const int rank = c->rank;
  const u64 half = run & 1;
  if (blockIdx.x == 0 && threadIdx.x < N - 1) {
    int i = threadIdx.x;
    LL16Packet* to = packets(descSlot(c->peerScratch[i], c, half, rank));
    for (int k = 0; k < 4; k++) {
      to[k].write(call.desc[k], flag);
    }
  }
  __shared__ int bad;
  __shared__ int quit;
  if (threadIdx.x == 0) {
    bad = -1;
    quit = 0;
  }
  __syncthreads();
  if (threadIdx.x < N) {
    int q = threadIdx.x;
    if (q == rank) {
      for (int k = 0; k < 4; k++) {
        peers[q][k] = call.desc[k];
      }
    } else {
      const LL16Packet* from = packets(descSlot(c->scratch, c, half, q));
      Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
      // what q writes into this rank's boxes if it sends to this rank (0) or receives from it (1)
      // instead: a crossing (above); its descriptor then differs from this call's in kind
      const LL16Packet* others[2];
      u32 otherFlags[2];
      for (int s = 0; s < 2; s++) {
        const u64 number = c->p2pCount[(s == 0 ? kMaxRanks : 0) + q] + 1;
        others[s] = packets(p2pBox(c->scratch, c, s == 0, q, number & 1));
        otherFlags[s] = static_cast<u32>(number % kFlagPeriod) + 1;
      }
      uint2 first;
      const int got = awaitUnlessCrossed(from, flag, others, otherFlags, 2, deadline, first);
      if (got >= 0) {
        readDescriptor(got == 0 ? from : others[got - 1], got == 0 ? flag : otherFlags[got - 1], peers[q], deadline);
      }
      if (deadline.failed()) {
        stopOnAbort(c);
        quit = 1;
      } else if (peers[q][0] != call.desc[0] || peers[q][1] != call.desc[1]) {
        atomicMax(&bad, q);
      }
    }
  }
  __syncthreads();
  if (quit) {
    return false;
  }
  if (bad >= 0) {
    if (threadIdx.x == 0) {
      fail(c, kMismatch, bad, call.desc, peers[bad], run);
    }
    return false;
  }
  return true;
}

// Advances the run counter: the next kernel's blocks, whatever their number, read run + 1.
__device__ void finishRun(const Comm* c, u64 run) {
  __syncthreads();
  if (threadIdx.x == 0) {
    for (u32 b = blockIdx.x; b < kRunWords; b += gridDim.x) {
      c->runs[b] = run + 1;
    }
  }
}

// The end of a direct kernel (and a push kernel's round): this block's accesses are done (all threads
// passed the __syncthreads), thread i signals block blockIdx.x of peer i and waits for its signal.
// False when a wait gave up (the job was aborted or the deadline passed).
__device__ bool blockBarrier(const Comm* c) {
  __shared__ int gaveUp;
  if (threadIdx.x == 0) {
    gaveUp = 0;
  }
  __syncthreads();
  if (threadIdx.x < N - 1) {
    MemoryDevice2DeviceSemaphoreDeviceHandle s = c->sems[blockIdx.x * (N - 1) + threadIdx.x];
    s.signal();
    if (!s.wait(abortFlag(c), JMSCCLPP_DEVICE_TIMEOUT_NS)) {
      stopOnAbort(c);
      gaveUp = 1;
    }
  }
  __syncthreads();
  return gaveUp == 0;
}

// ---------------------------------------------------------------------------------------------
// copies (every thread of the grid its share; any alignment)

// Copies `bytes` from src to each of the nDst destinations, as thread `tid` of `nThreads`: each
// source word is loaded once and stored to every destination, kUnroll 16-byte words per thread in
// flight, when src and every destination are 16-byte aligned (what keeps NVLink busy: one word at
// a time per thread reached about two thirds of the bandwidth); jmscclpp::copy (the widest access
// both ends allow) per destination otherwise. The tail below 16 bytes goes byte by byte.
constexpr int kUnroll = 4;

__device__ void multiCopy(char* const* dsts, int nDst, const char* src, u64 bytes, u64 tid, u64 nThreads) {
  if (bytes == 0 || nDst == 0) {
    return;
  }
  bool vector = aligned(src, 16);
  for (int d = 0; d < nDst; d++) {
    vector = vector && aligned(dsts[d], 16);
  }
  if (!vector) {
    for (int d = 0; d < nDst; d++) {
      jmscclpp::copy(dsts[d], src, bytes, static_cast<u32>(tid), static_cast<u32>(nThreads));
    }
    return;
  }
  const uint4* from = reinterpret_cast<const uint4*>(src);
  const u64 words = bytes / 16;
  u64 i = tid;
  for (; i + (kUnroll - 1) * nThreads < words; i += kUnroll * nThreads) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      v[u] = from[i + u * nThreads];
    }
    for (int d = 0; d < nDst; d++) {
      uint4* to = reinterpret_cast<uint4*>(dsts[d]);
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        to[i + u * nThreads] = v[u];
      }
    }
  }
  for (; i < words; i += nThreads) {
    uint4 v = from[i];
    for (int d = 0; d < nDst; d++) {
      reinterpret_cast<uint4*>(dsts[d])[i] = v;
    }
  }
  for (u64 b = words * 16 + tid; b < bytes; b += nThreads) {
    char c = src[b];
    for (int d = 0; d < nDst; d++) {
      dsts[d][b] = c;
    }
  }
}

// Copies `bytes` from srcs[d] to dsts[d] for every d < N at once, as thread `tid` of `nThreads`:
// every pair's words are in flight together (an alltoall feeds every peer at the same time, the
// local slot among them), 16-byte words when every pointer is 16-byte aligned, jmscclpp::copy per
// pair otherwise.
__device__ void pairsCopy(char* const* dsts, const char* const* srcs, u64 bytes, u64 tid, u64 nThreads) {
  constexpr int U = N <= 2 ? 4 : (N <= 4 ? 2 : 1);
  bool vector = true;
  for (int d = 0; d < N; d++) {
    vector = vector && aligned(srcs[d], 16) && aligned(dsts[d], 16);
  }
  if (!vector) {
    for (int d = 0; d < N; d++) {
      jmscclpp::copy(dsts[d], srcs[d], bytes, static_cast<u32>(tid), static_cast<u32>(nThreads));
    }
    return;
  }
  const u64 words = bytes / 16;
  u64 i = tid;
  for (; i + (U - 1) * nThreads < words; i += U * nThreads) {
    uint4 v[N][U];
#pragma unroll
    for (int d = 0; d < N; d++) {
#pragma unroll
      for (int u = 0; u < U; u++) {
        v[d][u] = reinterpret_cast<const uint4*>(srcs[d])[i + u * nThreads];
      }
    }
#pragma unroll
    for (int d = 0; d < N; d++) {
#pragma unroll
      for (int u = 0; u < U; u++) {
        reinterpret_cast<uint4*>(dsts[d])[i + u * nThreads] = v[d][u];
      }
    }
  }
  for (; i < words; i += nThreads) {
#pragma unroll
    for (int d = 0; d < N; d++) {
      reinterpret_cast<uint4*>(dsts[d])[i] = reinterpret_cast<const uint4*>(srcs[d])[i];
    }
  }
  for (u64 b = words * 16 + tid; b < bytes; b += nThreads) {
#pragma unroll
    for (int d = 0; d < N; d++) {
      dsts[d][b] = srcs[d][b];
    }
  }
}

__forceinline__ __device__ void gridCopy(char* dst, const char* src, u64 bytes) {
  if (dst != src) {
    char* dsts[1] = {dst};
    multiCopy(dsts, 1, src, bytes, gtid(), gthreads());
  }
}

// Part r of `parts` (by default one per rank) of [0, n), counted in units of which `perVec` make a
// 16-byte vector (elements, or bytes): whole vectors split evenly, the last part also what follows
// the last whole vector. The same on every rank, whatever its alignment.
__forceinline__ __device__ void part(u64 n, u64 perVec, int r, u64& begin, u64& end, int parts = N) {
  u64 vectors = n / perVec;
  begin = vectors * r / parts * perVec;
  end = r == parts - 1 ? n : vectors * (r + 1) / parts * perVec;
}

#if defined(JMSCCLPP_T)
// ---------------------------------------------------------------------------------------------
// reductions

constexpr int T = JMSCCLPP_T;
constexpr int Op = JMSCCLPP_OP;
typedef jmscclpp::Elem<T> E;
typedef typename E::Bits Bits;
constexpr int W = E::bytes;

__forceinline__ __device__ Bits loadElement(const char* p, u64 i) {
  if constexpr (W == 8) {
    return *reinterpret_cast<const u64*>(p + i * 8);
  } else if constexpr (W == 4) {
    return *reinterpret_cast<const u32*>(p + i * 4);
  } else if constexpr (W == 2) {
    return *reinterpret_cast<const unsigned short*>(p + i * 2);
  } else {
    return static_cast<unsigned char>(p[i]);
  }
}

// An element at any alignment, byte by byte.
__forceinline__ __device__ Bits loadElementBytes(const char* p, u64 i) {
  u64 v = 0;
#pragma unroll
  for (int k = 0; k < W; k++) {
    v |= static_cast<u64>(static_cast<unsigned char>(p[i * W + k])) << (8 * k);
  }
  return static_cast<Bits>(v);
}

__forceinline__ __device__ void storeElementBytes(char* p, u64 i, Bits b) {
  u64 v = static_cast<u64>(b);
#pragma unroll
  for (int k = 0; k < W; k++) {
    p[i * W + k] = static_cast<char>(v >> (8 * k));
  }
}

// dsts[d][e] = op over srcs[q][e] (rank order) for elements [begin, end), as thread t of nt:
// 16-byte vectors when every pointer is 16-byte aligned (the range starts on a vector of every
// buffer then, since begin is a multiple of 16 / W), elements one by one otherwise.
template <int NS>
__device__ void reduceRange(const char* const* srcs, char* const* dsts, int nDst, u64 begin, u64 end, u64 t, u64 nt,
                            int nRanks) {
  if (end <= begin) {
    return;
  }
  bool vec = true;
#pragma unroll
  for (int q = 0; q < NS; q++) {
    vec = vec && aligned(srcs[q] + begin * W, 16);
  }
  for (int d = 0; d < nDst; d++) {
    vec = vec && aligned(dsts[d] + begin * W, 16);
  }
  u64 first = begin;
  if (vec) {
    constexpr u64 perVec = 16 / W;
    u64 vectors = (end - begin) / perVec;
    constexpr int U = NS <= 2 ? 4 : (NS <= 4 ? 2 : 1);
    const u64 step = nt * U;
    for (u64 base = t; base < vectors; base += step) {
      uint4 v[NS][U];
#pragma unroll
      for (int q = 0; q < NS; q++) {
        const uint4* s = reinterpret_cast<const uint4*>(srcs[q] + begin * W);
#pragma unroll
        for (int k = 0; k < U; k++) {
          u64 at = base + k * nt;
          v[q][k] = at < vectors ? s[at] : make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int k = 0; k < U; k++) {
        u64 at = base + k * nt;
        if (at < vectors) {
          jmscclpp::Vec16Reducer<T, Op> r;
          r.init(v[0][k]);
#pragma unroll
          for (int q = 1; q < NS; q++) {
            r.add(v[q][k]);
          }
          uint4 out = r.result(nRanks);
          for (int d = 0; d < nDst; d++) {
            reinterpret_cast<uint4*>(dsts[d] + begin * W)[at] = out;
          }
        }
      }
    }
    first = begin + vectors * perVec;
  }
  bool elemAligned = true;
#pragma unroll
  for (int q = 0; q < NS; q++) {
    elemAligned = elemAligned && aligned(srcs[q], W);
  }
  for (int d = 0; d < nDst; d++) {
    elemAligned = elemAligned && aligned(dsts[d], W);
  }
  for (u64 e = first + t; e < end; e += nt) {
    jmscclpp::Reducer<T, Op> r;
#pragma unroll
    for (int q = 0; q < NS; q++) {
      Bits x = elemAligned ? loadElement(srcs[q], e) : loadElementBytes(srcs[q], e);
      if (q == 0) {
        r.init(x);
      } else {
        r.add(x);
      }
    }
    Bits out = r.result(nRanks);
    for (int d = 0; d < nDst; d++) {
      storeElementBytes(dsts[d], e, out);
    }
  }
}

// LL: sum the packets of every rank (this rank's own payload from `own`) into `out`.
__device__ void llReduce(const Comm* c, const Call& call, u64 half, u32 flag, const char* own, char* out, u64 bytes) {
  const int rank = c->rank;
  const u64 nPackets = (bytes + 7) / 8;
  const bool ownAligned = aligned(own, 8);
  const bool outAligned = aligned(out, 8);
  Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
  for (u64 i = gtid(); i < nPackets && !deadline.failed(); i += gthreads()) {
    jmscclpp::Vec8Reducer<T, Op> r;
#pragma unroll
    for (int q = 0; q < N; q++) {
      uint2 v;
      if (q == rank) {
        v = loadPayload(own, bytes, i, ownAligned);
      } else {
        const char* slot = c->scratch + c->offLL + (half * N + q) * c->llSlotBytes;
        v = packets(const_cast<char*>(slot))[i].read(flag, deadline);
      }
      if (q == 0) {
        r.init(v);
      } else {
        r.add(v);
      }
    }
    storePayload(out, bytes, i, r.result(N), outAligned);
  }
  if (deadline.failed()) {
    stopOnAbort(c);
  }
}
#endif  // JMSCCLPP_T

// ---------------------------------------------------------------------------------------------
// LL one shot

// Sends `bytes` of `src` as packets into this rank's slot of the current half of peer i's LL area.
__device__ void llSend(const Comm* c, int i, u64 half, u32 flag, const char* src, u64 bytes) {
  char* slot = c->peerScratch[i] + c->offLL + (half * N + c->rank) * c->llSlotBytes;
  toPackets(packets(slot), flag, src, bytes, gtid(), gthreads());
}

// Copies the packets rank q sent into `out`.
__device__ void llReceive(const Comm* c, int q, u64 half, u32 flag, char* out, u64 bytes) {
  char* slot = c->scratch + c->offLL + (half * N + q) * c->llSlotBytes;
  Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
  fromPackets(packets(slot), flag, out, bytes, gtid(), gthreads(), deadline);
  if (deadline.failed()) {
    stopOnAbort(c);
  }
}

// What this rank sends peer rank p in an LL run: the bytes of `send` at *offset, or none.
__device__ u64 llOutgoing(const Call& call, int rank, int p, u64 bytes, u64* offset) {
  *offset = 0;
  switch (call.kind) {
    case kAllReduce:
    case kAllGather:
      return bytes;
    case kBroadcast:
      return rank == call.root ? bytes : 0;
    case kReduce:
      return p == call.root ? bytes : 0;
    case kReduceScatter:
    case kAllToAll:
      *offset = static_cast<u64>(p) * bytes;
      return bytes;
    default:
      return 0;
  }
}

__device__ void llRun(const Comm* c, const Call& call, u64 run) {
  const int rank = c->rank;
  const u64 half = run & 1;
  const u32 flag = static_cast<u32>(run % kFlagPeriod) + 1;
  const u64 bytes = call.count * call.elementBytes;  // per rank and block
  __shared__ u64 peerDesc[kMaxRanks][4];
  // send first: what a peer reads only after it saw this run's descriptor is already on its way
  for (int i = 0; i < N - 1; i++) {
    u64 offset;
    u64 n = llOutgoing(call, rank, peerRank(i, rank), bytes, &offset);
    if (n > 0) {
      llSend(c, i, half, flag, call.send + offset, n);
    }
  }
  if (!exchangeDescriptors(c, call, run, flag, peerDesc)) {
    return;
  }
  switch (call.kind) {
#if defined(JMSCCLPP_T)
    case kAllReduce:
      llReduce(c, call, half, flag, call.send, call.recv, bytes);
      break;
    case kReduceScatter:
      llReduce(c, call, half, flag, call.send + static_cast<u64>(rank) * bytes, call.recv, bytes);
      break;
    case kReduce:
      if (rank == call.root) {
        llReduce(c, call, half, flag, call.send, call.recv, bytes);
      }
      break;
#else
    case kBroadcast:
      if (rank != call.root) {
        llReceive(c, call.root, half, flag, call.recv, bytes);
      } else if (!call.inPlace) {
        gridCopy(call.recv, call.send, bytes);
      }
      break;
    case kAllGather:
    case kAllToAll:
      for (int q = 0; q < N; q++) {
        char* to = call.recv + static_cast<u64>(q) * bytes;
        if (q != rank) {
          llReceive(c, q, half, flag, to, bytes);
        } else if (!call.inPlace) {
          gridCopy(to, call.send + (call.kind == kAllToAll ? static_cast<u64>(rank) * bytes : 0), bytes);
        }
      }
      break;
#endif
    default:
      break;
  }
  finishRun(c, run);
}

// ---------------------------------------------------------------------------------------------
// direct

// Where rank q's send data (which = 0) or receive buffer (which = 1) is in this process: this
// rank's own from the call, a peer's from its descriptor's location (registered) or its staged
// area. Null when the peer named a registration this rank does not hold.
__device__ char* locate(const Comm* c, const Call& call, const u64 (*desc)[4], int q, int which) {
  if (q == c->rank) {
    return which == 0 ? const_cast<char*>(call.send) : call.recv;
  }
  int i = peerIndex(q, c->rank);
  if (call.staged) {
    return c->peerScratch[i] + (which == 0 ? c->offIn : c->offOut);
  }
  u64 location = desc[q][2 + which];
  if ((location >> 63) == 0) {
    return nullptr;
  }
  u64 index = (location >> 48) & 0x7FFF;
  u64 offset = location & 0xFFFFFFFFFFFFull;
  if (index >= kMaxRegistrations) {
    return nullptr;
  }
  u64 base = c->regTable[index * kMaxPeers + i];
  return base == 0 ? nullptr : reinterpret_cast<char*>(base + offset);
}

// Whether rank q's buffer of `which` is used by this rank in a direct run of `call`.
__device__ bool uses(const Call& call, int rank, int q, int which) {
  switch (call.kind) {
    case kAllReduce:
      return true;
    case kReduceScatter:
      return which == 0;
    case kReduce:
      return which == 0 || q == call.root;
    case kBroadcast:
      return which == 0 ? q == call.root : true;
    case kAllGather:
    case kAllToAll:
      return which == 1 || q == rank;
    default:
      return false;
  }
}

#if !defined(JMSCCLPP_T)
// Broadcast in one pass with every byte leaving the root once. Two ranks: the root stores its data
// into the peer's buffer and its own. More: non-root v (of N - 1) reads slice v of the root's data
// and stores each word into its own buffer and every other non-root's, so that the root's links
// carry the data once and every other rank's at most once each way, with no step waiting for
// another (a scatter, a barrier, then an allgather that also read the root's slice from the root
// had its links carry 1.5 times the data on four ranks, in two steps).
__device__ void broadcastFromRoot(const Comm* c, const Call& call, char* const* src, char* const* dst, u64 bytes) {
  const int rank = c->rank;
  const int root = call.root;
  if (rank == root) {
    char* dsts[2];
    int nDst = 0;
    if (N == 2) {
      dsts[nDst++] = dst[1 - root];
    }
    if (!call.inPlace) {
      dsts[nDst++] = call.recv;
    }
    multiCopy(dsts, nDst, call.send, bytes, gtid(), gthreads());
    return;
  }
  if (N == 2) {
    return;
  }
  u64 begin, end;
  part(bytes, 16, nonRootIndex(rank, root), begin, end, N - 1);
  char* dsts[kMaxRanks];
  int nDst = 0;
  for (int s = 1; s < N; s++) {
    int q = (rank + s) % N;
    if (q != root) {
      dsts[nDst++] = dst[q] + begin;
    }
  }
  dsts[nDst++] = call.recv + begin;
  multiCopy(dsts, nDst, src[root] + begin, end - begin, gtid(), gthreads());
}
#endif

// ---------------------------------------------------------------------------------------------
// push (Call::algo 2, on registered buffers only): every byte crosses NVLink as a store, never as a
// read (on 4 x H200 the algorithms that read their peers' buffers ran their links at 290-325 GB/s
// against 345-350 for the ones that only store). The data goes in rounds of chunks, block b taking
// chunk k * gridDim.x + b of each part in round k. allReduce's rounds end at blockBarrier (every rank
// signals every peer once a round, so the counts stay in step for the end barrier), which is both
// "your chunks are here" and "I am done with what you sent me the round before last"; the chains
// below signal only their neighbours.

// The rounds and chunk bytes of parts of at most `partBytes`, where a chunk may be `maxChunk` bytes
// at most: chunks of about equal size (whole 16-byte vectors), every block the same number of rounds.
__device__ void pushRounds(u64 partBytes, u64 maxChunk, u64& rounds, u64& chunk) {
  const u64 blocks = gridDim.x;
  rounds = partBytes == 0 ? 0 : (partBytes + blocks * maxChunk - 1) / (blocks * maxChunk);
  chunk = rounds == 0 ? 16 : ((partBytes + blocks * rounds - 1) / (blocks * rounds) + 15) & ~15ull;
}

#if defined(JMSCCLPP_T)
// Rank `from`'s chunk slot for (block, parity) in the IN area of `base` (an owner's scratch).
__forceinline__ __device__ char* pushSlot(const Comm* c, char* base, int fromIndex, u64 parity, u64 chunk) {
  return base + c->offIn + ((static_cast<u64>(blockIdx.x) * 2 + parity) * (N - 1) + fromIndex) * chunk;
}

// allReduce (and reduce on two ranks) by pushes: part j of the data (as rsag cuts it) is rank j's to
// reduce; in round k each rank stores chunk k of every other rank's part into that rank's IN area (two
// slots a block and sender, by the round's parity), then after the handshake each rank reduces chunk
// k of its part (its own data and the N - 1 slots, in rank order) and stores the result into every
// rank's receive buffer (reduce: the root's). Per rank and direction the links carry what rsag's
// reads and stores carry.
__device__ void pushReduce(const Comm* c, const Call& call, char* const* dst) {
  const int rank = c->rank;
  u64 largest = 0;
  for (int j = 0; j < N; j++) {
    u64 b, e;
    part(call.count, 16 / W, j, b, e);
    largest = e - b > largest ? e - b : largest;
  }
  u64 rounds, chunk;
  pushRounds(largest * W, (c->stagedBytes / (static_cast<u64>(gridDim.x) * 2 * (N - 1))) & ~15ull, rounds, chunk);
  const u64 perChunk = chunk / W;
  for (u64 k = 0; k < rounds; k++) {
    const u64 parity = k & 1;
    const u64 at = (k * gridDim.x + blockIdx.x) * perChunk;  // the chunk's first element within a part
    for (int s = 1; s < N; s++) {
      const int o = (rank + s) % N;  // the next ranks first, in rotation, as allGather stores
      u64 b, e;
      part(call.count, 16 / W, o, b, e);
      if (b + at < e) {
        const u64 n = (e - b - at < perChunk ? e - b - at : perChunk) * W;
        char* to[1] = {pushSlot(c, c->peerScratch[peerIndex(o, rank)], peerIndex(rank, o), parity, chunk)};
        multiCopy(to, 1, call.send + (b + at) * W, n, threadIdx.x, blockDim.x);
      }
    }
    if (!blockBarrier(c)) {
      return;
    }
    u64 b, e;
    part(call.count, 16 / W, rank, b, e);
    if (b + at < e) {
      const u64 m = e - b - at < perChunk ? e - b - at : perChunk;
      const char* srcs[N];
#pragma unroll
      for (int q = 0; q < N; q++) {
        srcs[q] = q == rank ? call.send + (b + at) * W : pushSlot(c, c->scratch, peerIndex(q, rank), parity, chunk);
      }
      char* outs[kMaxRanks];
      int nOut = 0;
      if (call.kind == kAllReduce) {
        for (int s = 1; s <= N; s++) {
          outs[nOut++] = dst[(rank + s) % N] + (b + at) * W;
        }
      } else {
        outs[nOut++] = dst[call.root] + (b + at) * W;
      }
      reduceRange<N>(srcs, outs, nOut, 0, m, threadIdx.x, blockDim.x, N);
    }
  }
}
#endif  // JMSCCLPP_T (push)

// Chains (reduce on more than two ranks, broadcast): the ranks in a line, each storing only into the
// next one, as NCCL's rings do, so that each rank's links carry the data once each way to a single
// peer (on 4 x H200 every pair spread over three peers ran at 290-330 GB/s, a single pair at 366).
// Block b of every rank takes chunks k * gridDim.x + b of the buffer in round k; a rank signals the
// next one's block b when a chunk is there (the per-block semaphore of that pair) and, where the next
// one's copy lands in a ring of kChainDepth slots in its IN area, the next one signals back when it is
// done with a slot (only for the slots the sender reuses: the counts stay in step for the end barrier).
constexpr u64 kChainDepth = 4;
constexpr u64 kChainRounds = 128;      // rounds aimed at: the pipeline fills in N - 1 of them
constexpr u64 kChainMinChunk = 32ull << 10;

// Rounds and chunk bytes of a chain over `bytes`, with chunks of at most maxChunk.
__device__ void chainRounds(u64 bytes, u64 maxChunk, u64& rounds, u64& chunk) {
  u64 aim = (bytes / (static_cast<u64>(gridDim.x) * kChainRounds) + 15) & ~15ull;
  aim = aim < kChainMinChunk ? kChainMinChunk : aim;
  pushRounds(bytes, aim < maxChunk ? aim : maxChunk, rounds, chunk);
}

// Thread 0 of the block signals block blockIdx.x of `peer` (after every store of the block).
__device__ void chainSignal(const Comm* c, int peer) {
  __syncthreads();
  if (threadIdx.x == 0) {
    c->sems[blockIdx.x * (N - 1) + peerIndex(peer, c->rank)].signal();
  }
}

// Thread 0 of the block waits for the next signal of `peer`'s block blockIdx.x; then the whole block
// goes on. False when the wait gave up.
__device__ bool chainWait(const Comm* c, int peer) {
  __shared__ int gaveUp;
  __syncthreads();
  if (threadIdx.x == 0) {
    gaveUp = 0;
    if (!c->sems[blockIdx.x * (N - 1) + peerIndex(peer, c->rank)].wait(abortFlag(c), JMSCCLPP_DEVICE_TIMEOUT_NS)) {
      stopOnAbort(c);
      gaveUp = 1;
    }
  }
  __syncthreads();
  return gaveUp == 0;
}
#if defined(JMSCCLPP_T)
// reduce by a chain (more than two ranks): from rank 0 to rank N - 1, each rank adds its data to what
// the previous one stored into its slot and stores the sum into the next one's slot; the last stores
// the sum into the root's receive buffer. Rank order, as every reduction of the engine, so a chain
// holds its partial sums in the type itself only where that changes no bit of the result
// (chainReduces); and only where the root is the first or the last rank, whose links then carry the
// data once each way (a root in between would take the partial sums and the result both).
constexpr bool kChainable = Op != jmscclpp::ReduceOpAvg &&
                            (E::kind == jmscclpp::ElemKindInteger || W >= 4 || Op == jmscclpp::ReduceOpMin ||
                             Op == jmscclpp::ReduceOpMax);

__forceinline__ __device__ bool chainReduces(const Call& call) {
  return kChainable && N > 2 && call.kind == kReduce && (call.root == 0 || call.root == N - 1);
}

__device__ void chainReduce(const Comm* c, const Call& call, char* const* dst) {
  const int rank = c->rank;  // the chain's position too
  const int prev = rank - 1;
  const int next = rank + 1;
  u64 rounds, chunk;
  chainRounds(call.count * W, (c->stagedBytes / (static_cast<u64>(gridDim.x) * kChainDepth)) & ~15ull, rounds, chunk);
  const u64 perChunk = chunk / W;
  for (u64 k = 0; k < rounds; k++) {
    const u64 at = (k * gridDim.x + blockIdx.x) * perChunk;
    const u64 m = at >= call.count ? 0 : (call.count - at < perChunk ? call.count - at : perChunk);
    const u64 slot = (static_cast<u64>(blockIdx.x) * kChainDepth + k % kChainDepth) * chunk;
    if (rank > 0 && !chainWait(c, prev)) {
      return;
    }
    if (rank < N - 1 && k >= kChainDepth && !chainWait(c, next)) {
      return;
    }
    if (m > 0) {
      char* to[1] = {rank == N - 1 ? dst[call.root] + at * W : c->peerScratch[peerIndex(next, rank)] + c->offIn + slot};
      if (rank == 0) {
        multiCopy(to, 1, call.send + at * W, m * W, threadIdx.x, blockDim.x);
      } else {
        const char* srcs[2] = {c->scratch + c->offIn + slot, call.send + at * W};  // the earlier ranks' first
        reduceRange<2>(srcs, to, 1, 0, m, threadIdx.x, blockDim.x, N);
      }
    }
    if (rank > 0 && k + kChainDepth < rounds) {
      chainSignal(c, prev);
    }
    if (rank < N - 1) {
      chainSignal(c, next);
    }
  }
}
#else
// broadcast by a chain: from the root round the ranks, each stores each chunk into the next one's
// receive buffer (the root from its send buffer, the others from their own receive buffer once the
// previous one's signal came); the last one only takes the signals.
__device__ void chainBroadcast(const Comm* c, const Call& call, char* const* dst, u64 bytes) {
  const int rank = c->rank;
  const int pos = (rank - call.root + N) % N;  // the root first
  const int prev = (rank - 1 + N) % N;
  const int next = (rank + 1) % N;
  u64 rounds, chunk;
  chainRounds(bytes, ~15ull, rounds, chunk);  // no slots: chunks of any size
  for (u64 k = 0; k < rounds; k++) {
    const u64 at = (k * gridDim.x + blockIdx.x) * chunk;
    const u64 n = at >= bytes ? 0 : (bytes - at < chunk ? bytes - at : chunk);
    if (pos > 0 && !chainWait(c, prev)) {
      return;
    }
    if (pos < N - 1) {
      if (n > 0) {
        char* to[2] = {dst[next] + at, call.recv + at};
        multiCopy(to, pos == 0 && !call.inPlace ? 2 : 1, (pos == 0 ? call.send : call.recv) + at, n, threadIdx.x,
                  blockDim.x);
      }
      chainSignal(c, next);
    }
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// copy engine (algo 3: allGather, allToAll, broadcast and, on two ranks, allReduce on registered
// buffers)
//
// The GPU's copy engines carry more over NVLink than any kernel's stores (2 x H200, 512 MiB each way
// at once: 391 GB/s against 364-366 for SM stores of every shape, TMA's bulk stores included;
// docs/collectives.md, stop 42), but only the host can start them. Once the descriptors agree, thread
// 0 of block 0 posts, for each peer it sends to, a request into the communicator's ring in pinned host
// memory (kCeSlots slots of 8 words, the last one the slot's sequence number, written last); the host's
// copy proxy (CudaCollectiveComm) enqueues the copy on that peer's copy stream and behind it two stream
// writes of run + 1: into the peer's "in" word for this rank (the data is there) and into this rank's
// "out" word for the peer (its source is read). The kernel copies its own slot meanwhile and ends once
// every "in" word it expects and every "out" word it posted show the run: everything meant for it has
// arrived and nothing of its buffers is still read, so no block barrier follows. The words lie in the
// scratch (kCeWords: [kMaxRanks] in, by sender, then [kMaxRanks] out, by receiver) and only grow, as the
// run does; a request is posted after the peer's descriptor of this run came, so the peer's stream has
// reached this run and its buffers are free to write, as for the direct algorithms' stores. A send
// of algorithm ce that stores into a registered receive buffer posts its copy the same way, with
// this rank's p2p word for the receiver (after the out words) as both words and the message's
// number as the value, and its first thread waits for it before the end's "done" goes out.
constexpr u64 kCeWords = 3584;  // CudaCollectiveComm.Layout.CE_WORDS
constexpr u64 kCeSlots = 64;    // CudaCollectiveComm.CE_SLOTS
constexpr int kCeRequestWords = 8;

constexpr int kCeSendAlgorithm = 20;  // CudaCollectiveComm.SEND_CE's id

// which: 0 "in" (by sender), 1 "out" (by receiver), 2 a send's (by receiver); an allReduce's (by
// peer): 3 a chunk of this rank's share arrived, 4 the peer's results arrived, 6 this rank's chunks
// read, 7 its results read (5 is free)
__forceinline__ __device__ u64* ceWord(char* scratch, int which, int rank) {
  return reinterpret_cast<u64*>(scratch + kCeWords + (static_cast<u64>(which) * kMaxRanks + rank) * 8);
}

// Posts the copy of `bytes` from `from` (this GPU) to `to` (the memory of peer index i, mapped here)
// on that peer's copy stream, then the writes of `value` into `in` and `out` (each unless null).
__device__ void cePost(const Comm* c, int i, char* to, const char* from, u64 bytes, u64* in, u64* out, u64 value) {
  const u64 pos = atomicAdd(reinterpret_cast<unsigned long long*>(c->ceHead), 1ull);
  volatile u64* r = c->ceRing + (pos % kCeSlots) * kCeRequestWords;
  r[0] = reinterpret_cast<u64>(to);
  r[1] = reinterpret_cast<u64>(from);
  r[2] = bytes;
  r[3] = reinterpret_cast<u64>(in);
  r[4] = reinterpret_cast<u64>(out);
  r[5] = value;
  r[6] = static_cast<u64>(i);
  __threadfence_system();
  jmscclpp::storeReleaseSys(const_cast<u64*>(r + 7), pos + 1);
}

// Waits until `word` shows `value`; false when the wait gave up (the communicator is then aborted).
__device__ bool ceAwait(const Comm* c, const u64* word, u64 value, Deadline& deadline) {
  while (jmscclpp::loadAcquireSys(word) < value) {
    if (deadline.expired()) {
      stopOnAbort(c);
      return false;
    }
  }
  return true;
}

#if defined(JMSCCLPP_T)
constexpr u64 kCeAllReduceChunks = 2;  // chunks of a share
#if !defined(JMSCCLPP_CE_REDUCE_BLOCKS)
#define JMSCCLPP_CE_REDUCE_BLOCKS 16  // CudaCollectiveComm.CE_REDUCE_BLOCKS_PROPERTY
#endif
constexpr u64 kCeAllReduceMinChunk = 1ull << 20;  // bytes, at least

// allReduce by the copy engines, two ranks, both out of place (directRun): rank r reduces
// share r (part()), chunk by chunk as the peer's copies of it arrive. The peer's chunks land where
// the result goes (this rank's receive buffer at its share, which nothing else writes before the
// result), so the driver (thread 0 of block 0) posts every chunk of the peer's share at once. Every
// block reduces its part of each chunk of its own share once the chunk is there (word 3; this rank's
// data first or second by rank, as every reduction of the engine), in place, and publishes its
// progress; once every block is past a chunk the driver posts the copy of the result into the
// peer's receive buffer. All go on the peer's copy stream in the order posted, so the link carries
// the peer's share and then the results without a gap once the first chunk is reduced before the
// second has crossed; the reduction runs on few blocks, since more slow the copy engines down. A
// copy stream stops after a copy until the words behind it are written, so only the share's chunks
// write word 3 and only the last copies write the others: the last share's "read" (word 6) and the
// last result's "arrived" (word 4 at the peer) and "read" (word 7); the kernel ends once the three
// show the run. Every value is (run + 1) << 32 plus the chunk's number + 1, so the words only grow;
// blocks' progress lies in ceHead[1 + b]. The grid is the push kernels' (both ranks launch the same
// one, and in place it runs push); only the first JMSCCLPP_CE_REDUCE_BLOCKS blocks take part.
__device__ void ceAllReduce(const Comm* c, const Call& call, char* const* dst, u64 run) {
  const u32 blocks = gridDim.x < JMSCCLPP_CE_REDUCE_BLOCKS ? gridDim.x : JMSCCLPP_CE_REDUCE_BLOCKS;
  if (blockIdx.x >= blocks) {
    return;
  }
  const int rank = c->rank;
  const int peer = 1 - rank;
  const u64 base = (run + 1) << 32;
  // elements of a chunk: the same on both ranks (from the count, not the share)
  const u64 vec = 16 / W;
  const u64 spread = ((call.count / 2 + kCeAllReduceChunks - 1) / kCeAllReduceChunks + vec - 1) / vec * vec;
  const u64 chunk = spread * W < kCeAllReduceMinChunk ? kCeAllReduceMinChunk / W : spread;
  u64 mb, me, pb, pe;
  part(call.count, vec, rank, mb, me);
  part(call.count, vec, peer, pb, pe);
  const u64 mine = (me - mb + chunk - 1) / chunk;    // chunks of this rank's share
  const u64 theirs = (pe - pb + chunk - 1) / chunk;  // of the peer's
  char* peerScratch = c->peerScratch[0];
  u64* progress = c->ceHead + 1;
  const bool driver = blockIdx.x == 0 && threadIdx.x == 0;
  __shared__ int stop;
  Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
  if (driver) {
    for (u64 k = 0; k < theirs; k++) {
      const u64 at = pb + k * chunk;
      const u64 n = (pe - at < chunk ? pe - at : chunk) * W;
      cePost(c, 0, dst[peer] + at * W, call.send + at * W, n, ceWord(peerScratch, 3, rank),
             k + 1 == theirs ? ceWord(c->scratch, 6, peer) : nullptr, base + k + 1);
    }
  }
  if (threadIdx.x == 0) {
    stop = 0;
  }
  for (u64 k = 0; k < mine; k++) {
    if (threadIdx.x == 0 && !ceAwait(c, ceWord(c->scratch, 3, peer), base + k + 1, deadline)) {
      stop = 1;
    }
    __syncthreads();
    if (stop) {
      return;
    }
    const u64 at = mb + k * chunk;
    const u64 m = me - at < chunk ? me - at : chunk;
    const char* srcs[2];
    srcs[rank] = call.send + at * W;
    srcs[peer] = call.recv + at * W;
    char* outs[1] = {call.recv + at * W};
    u64 b, e;
    part(m, vec, blockIdx.x, b, e, blocks);
    reduceRange<2>(srcs, outs, 1, b, e, threadIdx.x, blockDim.x, 2);
    __syncthreads();
    if (threadIdx.x == 0) {
      // the result is read by the copy engine once the driver saw this
      __threadfence_system();
      jmscclpp::storeRelaxedSys(progress + blockIdx.x, base + k + 1);
    }
    if (driver) {
      for (u32 g = 0; g < blocks && !stop; g++) {
        if (!ceAwait(c, progress + g, base + k + 1, deadline)) {
          stop = 1;
        }
      }
      if (!stop) {
        const bool last = k + 1 == mine;
        cePost(c, 0, dst[peer] + at * W, call.recv + at * W, m * W, last ? ceWord(peerScratch, 4, rank) : nullptr,
               last ? ceWord(c->scratch, 7, peer) : nullptr, base + k + 1);
      }
    }
    __syncthreads();
    if (stop) {
      return;
    }
  }
  if (driver) {
    // the peer's results here, this rank's copies done
    if ((theirs > 0 && (!ceAwait(c, ceWord(c->scratch, 4, peer), base + theirs, deadline) ||
                        !ceAwait(c, ceWord(c->scratch, 6, peer), base + theirs, deadline))) ||
        (mine > 0 && !ceAwait(c, ceWord(c->scratch, 7, peer), base + mine, deadline))) {
      return;
    }
  }
}
#endif

#if !defined(JMSCCLPP_T)
// What this rank sends peer q (null: nothing); for q == rank, its own slot's data.
__device__ const char* ceSource(const Call& call, int rank, int q, u64 bytes) {
  switch (call.kind) {
    case kAllGather:
      return call.send;
    case kAllToAll:
      return call.send + static_cast<u64>(q) * bytes;
    case kBroadcast:
      return rank == call.root ? call.send : nullptr;
    default:
      return nullptr;
  }
}

__device__ void ceRun(const Comm* c, const Call& call, char* const* dst, u64 bytes, u64 run) {
  const int rank = c->rank;
  const u64 value = run + 1;
  const u64 slot = call.kind == kBroadcast ? 0 : static_cast<u64>(rank) * bytes;  // where this rank's data lands
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (int s = 1; s < N; s++) {
      const int q = (rank + s) % N;
      const char* from = ceSource(call, rank, q, bytes);
      if (from != nullptr) {
        // peer q's "in" word for this rank, this rank's "out" word for q
        cePost(c, peerIndex(q, rank), dst[q] + slot, from, bytes, ceWord(c->peerScratch[peerIndex(q, rank)], 0, rank),
               ceWord(c->scratch, 1, q), value);
      }
    }
  }
  // this rank's own slot (in place it is there already: the copy skips)
  const char* own = ceSource(call, rank, rank, bytes);
  if (own != nullptr && !call.inPlace) {
    gridCopy(call.recv + slot, own, bytes);
  }
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
    for (int q = 0; q < N; q++) {
      if (q == rank) {
        continue;
      }
      const bool in = call.kind != kBroadcast || q == call.root;
      const bool out = ceSource(call, rank, q, bytes) != nullptr;
      if ((in && !ceAwait(c, ceWord(c->scratch, 0, q), value, deadline)) ||
          (out && !ceAwait(c, ceWord(c->scratch, 1, q), value, deadline))) {
        return;
      }
    }
  }
}
#endif

__device__ void directRun(const Comm* c, const Call& call, u64 run) {
  const int rank = c->rank;
  const u32 flag = static_cast<u32>(run % kFlagPeriod) + 1;
  __shared__ u64 peerDesc[kMaxRanks][4];
  __shared__ char* src[kMaxRanks];
  __shared__ char* dst[kMaxRanks];
  __shared__ int missing;
  if (!exchangeDescriptors(c, call, run, flag, peerDesc)) {
    return;
  }
  if (threadIdx.x == 0) {
    missing = -1;
  }
  __syncthreads();
  if (threadIdx.x < N) {
    int q = threadIdx.x;
    src[q] = uses(call, rank, q, 0) ? locate(c, call, peerDesc, q, 0) : nullptr;
    dst[q] = uses(call, rank, q, 1) ? locate(c, call, peerDesc, q, 1) : nullptr;
    if ((uses(call, rank, q, 0) && src[q] == nullptr) || (uses(call, rank, q, 1) && dst[q] == nullptr)) {
      atomicMax(&missing, q);
    }
  }
  __syncthreads();
  if (missing >= 0) {
    if (threadIdx.x == 0) {
      fail(c, kUnknownRegistration, missing, call.desc, peerDesc[missing], run);
    }
    return;
  }
  const u64 bytes = call.count * call.elementBytes;
#if defined(JMSCCLPP_T)
  // a ce allReduce where either rank is in place (the peer's chunks would land on its input; a
  // descriptor's two locations are equal in place) or on more than two ranks runs push, on every
  // block: each rank decides from both ranks' descriptors, so both decide alike
  const bool ceAllReduceCall = call.algo == 3 && !call.staged && call.kind == kAllReduce;
  if (ceAllReduceCall && N == 2 && !call.inPlace && peerDesc[1 - rank][2] != peerDesc[1 - rank][3]) {
    ceAllReduce(c, call, dst, run);
    finishRun(c, run);
    return;
  }
  // a reduce the chain cannot take (chainReduces) on more than two ranks runs rs
  if (!call.staged &&
      (ceAllReduceCall || (call.algo == 2 && (call.kind == kAllReduce || N == 2 || chainReduces(call))))) {
    if (chainReduces(call)) {
      chainReduce(c, call, dst);
    } else {
      pushReduce(c, call, dst);
    }
#else
  if (call.algo == 3 && !call.staged) {
    ceRun(c, call, dst, bytes, run);
    finishRun(c, run);
    return;
  }
  if (call.algo == 2 && !call.staged) {
    chainBroadcast(c, call, dst, bytes);
#endif
    blockBarrier(c);
    finishRun(c, run);
    return;
  }
  switch (call.kind) {
#if defined(JMSCCLPP_T)
    case kAllReduce: {
      u64 begin, end;
      part(call.count, 16 / W, rank, begin, end);
      reduceRange<N>(src, dst, N, begin, end, gtid(), gthreads(), N);
      break;
    }
    case kReduceScatter: {
      const char* blocks[kMaxRanks];
      char* out[1] = {call.recv};
#pragma unroll
      for (int q = 0; q < N; q++) {
        blocks[q] = src[q] + static_cast<u64>(rank) * bytes;
      }
      reduceRange<N>(blocks, out, 1, 0, call.count, gtid(), gthreads(), N);
      break;
    }
    case kReduce: {
      // Two ranks: each reduces half and stores it into the root's buffer. More: the root takes no
      // share, so that its links carry each byte once each way (its data read by the others, the
      // results stored into it) instead of also reading its own share from every peer.
      if (N == 2 || rank != call.root) {
        u64 begin, end;
        if (N == 2) {
          part(call.count, 16 / W, rank, begin, end);
        } else {
          part(call.count, 16 / W, nonRootIndex(rank, call.root), begin, end, N - 1);
        }
        char* out[1] = {dst[call.root]};
        reduceRange<N>(src, out, 1, begin, end, gtid(), gthreads(), N);
      }
      break;
    }
#else
    case kBroadcast:
      broadcastFromRoot(c, call, src, dst, bytes);
      break;
    case kAllGather: {
      // every word of the slice loaded once and stored into every rank's slot (peers first, in
      // rotation from this rank, so that no rank's links take every peer's stores at once)
      char* dsts[kMaxRanks];
      int nDst = 0;
      for (int s = 1; s < N; s++) {
        dsts[nDst++] = dst[(rank + s) % N] + static_cast<u64>(rank) * bytes;
      }
      if (!call.inPlace) {
        dsts[nDst++] = call.recv + static_cast<u64>(rank) * bytes;
      }
      multiCopy(dsts, nDst, call.send, bytes, gtid(), gthreads());
      break;
    }
    case kAllToAll: {
      // slot q to peer q, every peer (and this rank's own slot) fed at once
      char* dsts[kMaxRanks];
      const char* srcs[kMaxRanks];
      for (int q = 0; q < N; q++) {
        dsts[q] = dst[q] + static_cast<u64>(rank) * bytes;
        // in place, the send buffer is a copy of the slots the peers overwrite (the host's), and this
        // rank's own slot stays where it is: copied onto itself
        srcs[q] = q == rank && call.inPlace ? dsts[q] : call.send + static_cast<u64>(q) * bytes;
      }
      pairsCopy(dsts, srcs, bytes, gtid(), gthreads());
      break;
    }
#endif
    default:
      break;
  }
  blockBarrier(c);
  finishRun(c, run);
}

}  // namespace

// Every block of the kernel tells the host that it is over: done.word[blockIdx.x] = done.value, after
// the block's barrier, with release (thread 0's fence covers the stores of every thread of the block),
// so a host thread that loads the words with acquire and sees the value in all of them knows the call
// is over, with no event to query and no count the blocks would contend for. The ordering is the
// GPU's scope, enough for GPU memory, which whatever comes next reaches through this GPU (its kernels
// and copies, a peer over NVLink); where a buffer is host memory, which a host thread may read as soon
// as it sees the words, the release is at the system's scope. A system fence per block is what a Mono
// call used to pay: 2 x H100, 1 KiB, back to back, 10.5-11.7 us a call against 7.5-8.1 (the stream
// form 5.3-5.9).
__device__ void tellHost(const Done& done) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (done.system != 0) {
      jmscclpp::storeReleaseSys(done.word + blockIdx.x, done.value);
    } else {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      jmscclpp::storeRelaxedSys(done.word + blockIdx.x, done.value);
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads) collective(const Comm* comm, Call call) {
  if (*reinterpret_cast<volatile u32*>(comm->failed) == 0) {
    const u64 run = comm->runs[blockIdx.x];
    if (call.algo == 0) {
      llRun(comm, call, run);
    } else {
      directRun(comm, call, run);
    }
  }
  if (call.done.word != nullptr) {
    tellHost(call.done);
  }
}

#if !defined(JMSCCLPP_T)
// ---------------------------------------------------------------------------------------------
// point to point
//
// One wave of a group's sends and receives: at most one send to and one receive from each rank,
// each with as many blocks as the host gave it (each end counts its own). Both ends write their
// descriptors into each other's box at once (the sender's word 2 locates its data: a registration,
// or 0 for its staged area, where the host copied it; the receiver's word 3 its receive buffer: a
// registration, or 0), and every block of both ends reads the other's, so both ends reach the same
// verdict: a mismatch fails both ranks, and the transfer is
//   inline, when the sender's descriptor says so (word 0, kInlineFlag: a message of at most
//        kP2pInlineBytes): the sender's blocks write the data, read from the caller's buffer, as LL16
//        packets into its inline area of the receiver's scratch as the descriptors cross, and the
//        sender is done once the receiver's descriptor agrees: one crossing of NVLink for each end,
//        no remote read, no registration, no staging; the receiver's blocks copy the packets into the
//        receive buffer;
//   push, when the receive buffer is registered (and the piece is 1 MiB or more; both ends see its
//        size): the sender's blocks store into it over NVLink and
//        the sender's last block to finish writes "done" into the receiver's box;
//   pull, otherwise: the receiver's blocks copy from the sender's data and the receiver's last block
//        writes "done" into the sender's box.
// Boxes and inline areas come in two halves, by the parity of the message number: an end writes a
// half again two messages later, after it read the other end's descriptor of the message between,
// which the other end wrote only when it was done with this one. The end that waits for "done"
// waits in its block 0; the kernel of either end ends only when its part is over, so a send buffer
// is free and a receive buffer full when it ends. Flags are the message numbers of the pair
// (p2pCount, device memory: graph replays stay in step), updated by each end's last block to
// finish, after every block of it read them.

// A message larger than the staged slot travels in pieces, a launch each, cut alike on both ends
// (neither end knows at enqueue time whether the other's buffers are registered). Where both are
// (the first piece is pushed, from the caller's own buffer), the sender stores the whole message in
// the first launch and both ends skip the launches of the other pieces at once: a handshake and a
// "done" per piece cost about 7 us each on 2 x H200 (1 GiB in 32 pieces of 32 MiB: 331 GB/s against
// 360 for allGather's stores).
struct P2pOp {
  u64 desc[4];     //  0 this rank's descriptor (SEND or RECV)
  char* buffer;    // 32 the data to send (staged: this rank's IN area + slot) or the receive buffer
  u64 bytes;       // 40 this piece's
  int peer;        // 48
  int send;        // 52 1 send, 0 receive
  int firstBlock;  // 56
  int blocks;      // 60
  u64 total;       // 64 the message's bytes
  u32 piece;       // 72 which piece this launch carries, from 0
  u32 pieces;      // 76 the launches the message travels in
};

struct P2p {
  int count;  // 0
  int pad;    // 4
  P2pOp ops[kMaxP2p];  // 8
  Done done;           // 8 + 80 kMaxP2p: as Call's (in the last launch of a Mono call)
};
static_assert(sizeof(P2pOp) == 80, "CudaCollectiveComm.P2P_OP_BYTES");
static_assert(sizeof(P2p) == 8 + 80 * kMaxP2p + 24, "CudaCollectiveComm.P2P_BYTES");

// Verdicts of this end alone: a wait gave up (the job was aborted): nothing moves, no error record;
// the peer is in a collective instead (awaitUnlessCrossed): nothing moves, the calls' mismatch.
constexpr u32 kVerdictAborted = 4;
constexpr u32 kVerdictCrossed = 5;

// The descriptor a peer writes for this rank's next collective run, had it called a collective, and
// its flag.
__device__ const LL16Packet* nextCollectiveDescriptor(const Comm* c, int peer, u32& flag) {
  const u64 run = c->runs[0];
  flag = static_cast<u32>(run % kFlagPeriod) + 1;
  return packets(descSlot(c->scratch, c, run & 1, peer));
}

constexpr u64 kPushMinBytes = 1ull << 20;
constexpr u64 kInlineFlag = 2ull << 32;  // in word 0 (CallDescriptor.INLINE): the data comes as packets
constexpr u64 kP2pInlineBytes = 256ull << 10;  // CudaCollectiveComm.INLINE_MAX_BYTES
constexpr u64 kP2pInlineSlot = kP2pInlineBytes * 2;  // its packets

// The inline area the sender `from` writes the packets of its messages of parity `half` into.
__device__ char* p2pInline(char* scratch, const Comm* c, int from, u64 half) {
  return scratch + c->offOut + c->stagedBytes + (static_cast<u64>(from) * 2 + half) * kP2pInlineSlot;
}

// Where a located registration of peer index i is mapped here, or null.
__device__ char* registered(const Comm* c, int i, u64 location) {
  if ((location >> 63) == 0) {
    return nullptr;
  }
  u64 index = (location >> 48) & 0x7FFF;
  u64 base = index < kMaxRegistrations ? c->regTable[index * kMaxPeers + i] : 0;
  return base == 0 ? nullptr : reinterpret_cast<char*>(base + (location & 0xFFFFFFFFFFFFull));
}

__device__ void p2pRun(const Comm* c, const P2pOp& op, int block) {
  const int rank = c->rank;
  const int i = peerIndex(op.peer, rank);
  const bool sender = op.send != 0;
  const int slot = (sender ? 0 : kMaxRanks) + op.peer;
  u64* count = &c->p2pCount[slot];
  u32* finished = &c->p2pDone[slot];
  u32* skip = &c->p2pDone[2 * kMaxRanks + slot];
  __shared__ u32 skipping;
  if (threadIdx.x == 0) {
    skipping = *skip;
  }
  __syncthreads();
  if (skipping != 0) {
    // a piece the first one carried: the last block of this end to get here counts it off
    if (threadIdx.x == 0 && atomicAdd(finished, 1u) + 1 == static_cast<u32>(op.blocks)) {
      *finished = 0;
      *skip = skipping - 1;
    }
    return;
  }
  const u64 number = *count + 1;
  const u32 flag = static_cast<u32>(number % kFlagPeriod) + 1;
  const u64 half = number & 1;
  LL16Packet* mine = packets(p2pBox(c->scratch, c, !sender, op.peer, half));
  __shared__ u64 theirs[4];
  __shared__ u32 verdict;   // 0 ok, 1 mismatch, 2 unknown registration
  __shared__ int push;
  __shared__ int whole;     // push: the first piece carries the whole message
  __shared__ int inlined;   // the data travels as packets (the sender's descriptor says so)
  __shared__ char* remote;  // push: the receive buffer (sender's view); pull: the data (receiver's view)
  const u64 tid = static_cast<u64>(block) * blockDim.x + threadIdx.x;
  const u64 nThreads = static_cast<u64>(op.blocks) * blockDim.x;
  if (sender && (op.desc[0] & kInlineFlag) != 0 && op.bytes <= kP2pInlineBytes) {
    // the data as packets, before anything is known of the receiver: its descriptor and the verdict
    // come after, and a receiver that disagrees never reads them
    toPackets(packets(p2pInline(c->peerScratch[i], c, rank, half)), flag, op.buffer, op.bytes, tid, nThreads);
  }
  if (threadIdx.x == 0) {
    // Block 0 writes this end's descriptor into the half of the message's parity (why no half is
    // written before it was read: the comment above P2pOp); every block reads the other end's and
    // reaches the same findings, so no block waits for another.
    if (block == 0) {
      LL16Packet* to = packets(p2pBox(c->peerScratch[i], c, sender, rank, half));
      for (int k = 0; k < 4; k++) {
        to[k].write(op.desc[k], flag);
      }
    }
    Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
    u32 collectiveFlag;
    const LL16Packet* collective = nextCollectiveDescriptor(c, op.peer, collectiveFlag);
    uint2 first;
    const int got = awaitUnlessCrossed(mine, flag, &collective, &collectiveFlag, 1, deadline, first);
    if (got >= 0) {
      readDescriptor(got == 0 ? mine : collective, got == 0 ? flag : collectiveFlag, theirs, deadline);
    }
    if (deadline.failed()) {
      stopOnAbort(c);
    }
    const u64* sendDesc = sender ? op.desc : theirs;
    const u64* recvDesc = sender ? theirs : op.desc;
    const int from = sender ? rank : op.peer;
    const int dest = sender ? op.peer : rank;
    u64 sw = sendDesc[0];
    u64 rw = recvDesc[0];
    // SEND (7) from `from` to `dest` against RECV (8) of `dest` from `from`: same type, count, algorithm
    bool same = (sw & 0xFF) == 7 && (rw & 0xFF) == 8 && ((sw >> 8) & 0xFF) == ((rw >> 8) & 0xFF) &&
                ((sw >> 24) & 0xFF) == ((rw >> 24) & 0xFF) && (sw >> 40) == static_cast<u64>(dest + 1) &&
                (rw >> 40) == static_cast<u64>(from + 1) && sendDesc[1] == recvDesc[1];
    verdict = deadline.failed() ? kVerdictAborted : got > 0 ? kVerdictCrossed : same ? 0 : 1;
    // the ends decide alike only when their descriptors agree (the same count: the same bytes); when
    // they do not, the receiver is the mover, which moves nothing and tells the sender so
    inlined = verdict == 0 && (sw & kInlineFlag) != 0 && op.bytes <= kP2pInlineBytes;
    // a registered receive buffer is stored into from kPushMinBytes up; below, the one hop fewer of a
    // copy by the receiver wins (measured on 2 x H200: 1 KiB 6.8 µs pulled, 8.6 pushed)
    push = verdict == 0 && !inlined && (recvDesc[3] >> 63) != 0 && op.bytes >= kPushMinBytes;
    // the first piece of a message sent from a registered buffer: the sender's `buffer` is its start
    whole = push && op.piece == 0 && op.pieces > 1 && (sendDesc[2] >> 63) != 0;
    remote = nullptr;
    if (inlined) {
      remote = p2pInline(c->scratch, c, op.peer, half);   // the receiver's own scratch; unused by the sender
    } else if (verdict == 0 && op.bytes > 0 && push == sender) {
      remote = push ? registered(c, i, recvDesc[3])
                    : (sendDesc[2] >> 63) == 0
                          ? c->peerScratch[i] + c->offIn + static_cast<u64>(rank) * (c->stagedBytes / N)
                          : registered(c, i, sendDesc[2]);
      if (remote == nullptr) {
        verdict = 2;
      }
    }
  }
  __syncthreads();
  const bool mover = push ? sender : !sender;
  if (verdict == 0 && mover && op.bytes > 0) {
    if (inlined) {
      // the receiver: this thread's packets from its inline area into the receive buffer
      __shared__ int gaveUp;
      if (threadIdx.x == 0) {
        gaveUp = 0;
      }
      __syncthreads();
      Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
      fromPackets(packets(remote), flag, op.buffer, op.bytes, tid, nThreads, deadline);
      if (deadline.failed()) {
        gaveUp = 1;
      }
      __syncthreads();
      if (threadIdx.x == 0 && gaveUp) {
        stopOnAbort(c);
        verdict = kVerdictAborted;
      }
    } else if (sender && ((op.desc[0] >> 24) & 0xFF) == kCeSendAlgorithm) {
      // the copy engines store into the receive buffer: block 0 posts the copy and waits for it, so
      // that the end's "done" below goes out after the data is there
      if (block == 0 && threadIdx.x == 0) {
        u64* word = ceWord(c->scratch, 2, op.peer);
        cePost(c, i, remote, op.buffer, whole ? op.total : op.bytes, word, word, number);
        Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
        if (!ceAwait(c, word, number, deadline)) {
          verdict = kVerdictAborted;
        }
      }
    } else {
      char* dsts[1] = {sender ? remote : op.buffer};
      multiCopy(dsts, 1, sender ? op.buffer : remote, whole ? op.total : op.bytes, tid, nThreads);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (!mover && !inlined && block == 0 && verdict != kVerdictAborted && verdict != kVerdictCrossed) {
      // the other end moves: wait for its "done" (which carries its verdict on locating the data); an
      // inline sender is done once its packets are written and the descriptors agree
      Deadline deadline(JMSCCLPP_DEVICE_TIMEOUT_NS, abortFlag(c));
      uint2 done = mine[4].read(flag, deadline);
      if (deadline.failed()) {
        stopOnAbort(c);
        verdict = kVerdictAborted;
      } else if (verdict == 0 && done.x != 0) {
        verdict = done.x;
      }
    }
    if ((verdict == 1 || verdict == 2) && block == 0) {
      fail(c, verdict == 1 ? kP2pMismatch : kUnknownRegistration, op.peer, op.desc, theirs, number);
    }
    if (verdict == kVerdictCrossed && block == 0) {
      fail(c, kMismatch, op.peer, op.desc, theirs, number);
      // this call as this rank's descriptor of the peer's collective run, for every rank in it
      const u64 run = c->runs[0];
      const u32 runFlag = static_cast<u32>(run % kFlagPeriod) + 1;
      for (int j = 0; j < N - 1; j++) {
        LL16Packet* to = packets(descSlot(c->peerScratch[j], c, run & 1, rank));
        for (int k = 0; k < 4; k++) {
          to[k].write(op.desc[k], runFlag);
        }
      }
    }
    // a pushing sender's stores into the peer must reach it before its "done"; the other cases write
    // nothing the peer reads but that packet (a system fence costs microseconds)
    if (push && sender) {
      __threadfence_system();
    } else {
      __threadfence();
    }
    if (atomicAdd(finished, 1u) + 1 == static_cast<u32>(op.blocks)) {
      // every block of this end is done (and read `number`)
      *finished = 0;
      *count = number;
      if (whole && verdict == 0) {
        *skip = op.pieces - 1;
      }
      if (mover && !inlined && verdict != kVerdictCrossed) {
        packets(p2pBox(c->peerScratch[i], c, sender, rank, half))[4].write(verdict, 0u, flag);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads) pointToPoint(const Comm* comm, P2p p2p) {
  if (*reinterpret_cast<volatile u32*>(comm->failed) == 0) {
    for (int k = 0; k < p2p.count; k++) {
      const P2pOp& op = p2p.ops[k];
      int b = static_cast<int>(blockIdx.x) - op.firstBlock;
      if (b >= 0 && b < op.blocks) {
        p2pRun(comm, op, b);
        break;
      }
    }
  }
  if (p2p.done.word != nullptr) {
    tellHost(p2p.done);
  }
}
#endif  // !JMSCCLPP_T
