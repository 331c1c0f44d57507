// NVLink store-rate experiment: two GPUs, each writing `bytes` into the other at the same time.
// Strategies: copy engine (cudaMemcpyAsync peer), SM 16-byte stores (grid, threads, unroll), SM reads
// (pull), TMA bulk copies staged through shared memory (cp.async.bulk), the copy engine beside SM stores.
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o nvlbench nvlbench.cu
// Run:   ./nvlbench BYTES REPS MODE   (stop 42: ./nvlbench 536870912 5 1, then ... 2; median of REPS after one untimed)
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
typedef unsigned long long u64;

template <int U>
__global__ void smCopy(uint4* dst, const uint4* src, u64 words) {
  u64 n = (u64)gridDim.x * blockDim.x;
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * n < words; i += U * n) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = src[i + u * n];
#pragma unroll
    for (int u = 0; u < U; u++) dst[i + u * n] = v[u];
  }
  for (; i < words; i += n) dst[i] = src[i];
}

// Block-contiguous variant: each block owns contiguous chunks of `chunk` words.
template <int U>
__global__ void smCopyChunks(uint4* dst, const uint4* src, u64 words, u64 chunk) {
  u64 nChunks = (words + chunk - 1) / chunk;
  for (u64 c = blockIdx.x; c < nChunks; c += gridDim.x) {
    u64 b = c * chunk, e = min(words, b + chunk);
    u64 i = b + threadIdx.x;
    for (; i + (U - 1) * blockDim.x < e; i += U * blockDim.x) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = src[i + u * blockDim.x];
#pragma unroll
      for (int u = 0; u < U; u++) dst[i + u * blockDim.x] = v[u];
    }
    for (; i < e; i += blockDim.x) dst[i] = src[i];
  }
}

__device__ __forceinline__ unsigned smemAddr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// TMA: `issuers` threads per block (lane 0 of warps 0..issuers-1), each with S stages of C bytes.
__global__ void tmaCopy(char* dst, const char* src, u64 bytes, unsigned C, int S) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) u64 bars[64];
  int warp = threadIdx.x / 32;
  int issuers = blockDim.x / 32;
  if (threadIdx.x % 32 != 0) return;
  char* stage0 = smem + (size_t)warp * S * C;
  u64* bar = bars + warp * S;
  for (int s = 0; s < S; s++) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smemAddr(bar + s)));
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  u64 nChunks = bytes / C;  // bytes a multiple of C
  u64 stride = (u64)gridDim.x * issuers;
  u64 first = (u64)blockIdx.x * issuers + warp;
  // my chunks: first + k*stride
  u64 K = first < nChunks ? (nChunks - first + stride - 1) / stride : 0;
  auto load = [&](u64 k) {
    int s = k % S;
    unsigned b = smemAddr(bar + s);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(C) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smemAddr(stage0 + (size_t)s * C)),
                 "l"(src + (first + k * stride) * C), "r"(C), "r"(b)
                 : "memory");
  };
  for (u64 k = 0; k < K && k < (u64)S; k++) load(k);
  for (u64 k = 0; k < K; k++) {
    int s = k % S;
    unsigned b = smemAddr(bar + s);
    unsigned parity = (k / S) & 1;
    unsigned done = 0;
    while (!done) {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b), "r"(parity) : "memory");
    }
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + (first + k * stride) * C),
                 "r"(smemAddr(stage0 + (size_t)s * C)), "r"(C) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (k + S < K) {
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      load(k + S);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

struct Side { int dev; char* buf; char* peerBuf; cudaStream_t st; cudaEvent_t a, b; cudaStream_t x[4]; cudaEvent_t fork, join[4]; };

int main(int argc, char** argv) {
  u64 bytes = argc > 1 ? strtoull(argv[1], 0, 0) : (512ull << 20);
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  int mode = argc > 3 ? atoi(argv[3]) : 2;  // 1: call 1's sweep of SM and TMA settings, 2: call 2's uni/bidir and CE mixes
  Side s[2];
  for (int d = 0; d < 2; d++) {
    s[d].dev = d;
    CK(cudaSetDevice(d));
    CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CK(cudaMalloc(&s[d].buf, 2 * bytes));  // [0,bytes): source, [bytes,2bytes): where the peer writes
    CK(cudaMemset(s[d].buf, d + 1, 2 * bytes));
    CK(cudaStreamCreateWithFlags(&s[d].st, cudaStreamNonBlocking));
    CK(cudaEventCreate(&s[d].a));
    CK(cudaEventCreate(&s[d].b));
    CK(cudaEventCreateWithFlags(&s[d].fork, cudaEventDisableTiming));
    for (int k = 0; k < 4; k++) { CK(cudaStreamCreateWithFlags(&s[d].x[k], cudaStreamNonBlocking)); CK(cudaEventCreateWithFlags(&s[d].join[k], cudaEventDisableTiming)); }
    CK(cudaFuncSetAttribute(tmaCopy, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  }
  for (int d = 0; d < 2; d++) s[d].peerBuf = s[1 - d].buf + bytes;
  for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }

  auto run = [&](const char* name, bool both, auto launch) {
    std::vector<double> t;
    for (int r = 0; r < reps + 1; r++) {
      for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
      for (int d = 0; d < (both ? 2 : 1); d++) {
        CK(cudaSetDevice(d));
        CK(cudaEventRecord(s[d].a, s[d].st));
        launch(s[d]);
        CK(cudaGetLastError());
        CK(cudaEventRecord(s[d].b, s[d].st));
      }
      float worst = 0;
      for (int d = 0; d < (both ? 2 : 1); d++) {
        CK(cudaSetDevice(d));
        CK(cudaEventSynchronize(s[d].b));
        float ms;
        CK(cudaEventElapsedTime(&ms, s[d].a, s[d].b));
        worst = std::max(worst, ms);
      }
      if (r > 0) t.push_back(worst);
    }
    std::sort(t.begin(), t.end());
    double med = t[t.size() / 2], best = t[0];
    printf("%-44s %s  median %8.1f us  %6.1f GB/s   best %6.1f GB/s\n", name, both ? "bidir" : "uni  ", med * 1e3,
           bytes / (med * 1e-3) / 1e9, bytes / (best * 1e-3) / 1e9);
    fflush(stdout);
  };
  // correctness check helper: peer wrote value of the other device
  auto check = [&](const char* name) {
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      unsigned char h[4];
      CK(cudaMemcpy(h, s[d].buf + bytes + bytes / 2, 4, cudaMemcpyDeviceToHost));
      if (h[0] != (unsigned char)(2 - d)) printf("  !! %s: device %d got %d\n", name, d, h[0]);
      CK(cudaMemset(s[d].buf + bytes, 0, bytes));
    }
  };

  if (mode == 1) {
  for (int both = 0; both < 2; both++) {
    run("copy engine memcpyAsync", both, [&](Side& x) { CK(cudaMemcpyAsync(x.peerBuf, x.buf, bytes, cudaMemcpyDefault, x.st)); });
    check("ce");
  }
  int grids[] = {32, 64, 128, 132, 264, 528};
  int threadsList[] = {256, 512, 1024};
  char name[128];
  for (int g : grids) for (int th : threadsList) {
    snprintf(name, sizeof name, "sm store U4 grid %d threads %d", g, th);
    run(name, true, [&](Side& x) { smCopy<4><<<g, th, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16); });
  }
  check("sm");
  for (int g : {128, 132, 264}) {
    snprintf(name, sizeof name, "sm store U1 grid %d threads 512", g);
    run(name, true, [&](Side& x) { smCopy<1><<<g, 512, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16); });
    snprintf(name, sizeof name, "sm store U8 grid %d threads 512", g);
    run(name, true, [&](Side& x) { smCopy<8><<<g, 512, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16); });
    for (u64 ch : {4096ull, 65536ull}) {
      snprintf(name, sizeof name, "sm store chunks %llu B U4 grid %d th 512", ch * 16, g);
      run(name, true, [&](Side& x) { smCopyChunks<4><<<g, 512, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16, ch); });
    }
    snprintf(name, sizeof name, "sm pull U4 grid %d threads 512", g);
    run(name, true, [&](Side& x) { smCopy<4><<<g, 512, 0, x.st>>>((uint4*)(x.buf + bytes), (const uint4*)(x.peerBuf - bytes), bytes / 16); });
  }
  check("sm2");
  struct T { int g, warps, S; unsigned C; };
  T ts[] = {{132, 1, 4, 32768}, {132, 1, 6, 32768}, {132, 2, 3, 32768}, {132, 4, 3, 16384}, {132, 4, 2, 16384},
            {132, 1, 4, 49152}, {132, 2, 2, 49152}, {264, 1, 3, 32768}, {264, 2, 3, 16384}, {132, 8, 2, 8192},
            {132, 4, 4, 8192}, {64, 2, 3, 32768}, {128, 4, 3, 16384}, {132, 1, 3, 65536}};
  for (T t : ts) {
    snprintf(name, sizeof name, "tma grid %d issuers %d stages %d chunk %u", t.g, t.warps, t.S, t.C);
    size_t sm = (size_t)t.warps * t.S * t.C;
    run(name, true, [&](Side& x) { tmaCopy<<<t.g, 32 * t.warps, sm, x.st>>>(x.peerBuf, x.buf, bytes, t.C, t.S); });
  }
  check("tma");
  return 0;
  }
  char name[160];
  // fork/join: run f(k, stream) on k = 0..n-1 extra streams
  auto forked = [&](Side& x, int n, auto f) {
    CK(cudaEventRecord(x.fork, x.st));
    for (int k = 0; k < n; k++) { CK(cudaStreamWaitEvent(x.x[k], x.fork, 0)); f(k, x.x[k]); CK(cudaEventRecord(x.join[k], x.x[k])); }
    for (int k = 0; k < n; k++) CK(cudaStreamWaitEvent(x.st, x.join[k], 0));
  };
  for (int both = 0; both < 2; both++) {
    run("copy engine memcpyAsync", both, [&](Side& x) { CK(cudaMemcpyAsync(x.peerBuf, x.buf, bytes, cudaMemcpyDefault, x.st)); });
    for (int n : {2, 4}) {
      snprintf(name, sizeof name, "copy engine split over %d streams", n);
      run(name, both, [&](Side& x) { forked(x, n, [&](int k, cudaStream_t st) {
        u64 part = bytes / n; CK(cudaMemcpyAsync(x.peerBuf + k * part, x.buf + k * part, part, cudaMemcpyDefault, st)); }); });
    }
    for (int g : {132, 264}) {
      snprintf(name, sizeof name, "sm store U4 grid %d threads 512", g);
      run(name, both, [&](Side& x) { smCopy<4><<<g, 512, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16); });
    }
    snprintf(name, sizeof name, "sm store U4 grid 66 threads 512");
    run(name, both, [&](Side& x) { smCopy<4><<<66, 512, 0, x.st>>>((uint4*)x.peerBuf, (const uint4*)x.buf, bytes / 16); });
    run("tma grid 132 issuers 2 stages 3 chunk 32768", both, [&](Side& x) { tmaCopy<<<132, 64, 2 * 3 * 32768, x.st>>>(x.peerBuf, x.buf, bytes, 32768, 3); });
    run("sm pull U4 grid 132 threads 512", both, [&](Side& x) { smCopy<4><<<132, 512, 0, x.st>>>((uint4*)(x.buf + bytes), (const uint4*)(x.peerBuf - bytes), bytes / 16); });
    // copy engine for a fraction, SM stores for the rest, concurrently
    for (int pct : {50, 75, 85, 90, 95}) {
      for (int g : {16, 32, 132}) {
        snprintf(name, sizeof name, "ce %d%% + sm grid %d (rest) concurrently", pct, g);
        run(name, both, [&](Side& x) { forked(x, 2, [&](int k, cudaStream_t st) {
          u64 ce = (bytes * pct / 100) & ~4095ull;
          if (k == 0) CK(cudaMemcpyAsync(x.peerBuf, x.buf, ce, cudaMemcpyDefault, st));
          else smCopy<4><<<g, 512, 0, st>>>((uint4*)(x.peerBuf + ce), (const uint4*)(x.buf + ce), (bytes - ce) / 16); }); });
      }
    }
  }
  check("v2");
  return 0;
}
