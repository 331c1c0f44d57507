// What a copy-engine request costs the host and how long until it runs, by the state of its stream.
// GPU 0's copy stream copies into GPU 1's memory (peer access), then writes a word on GPU 1 and a word in pinned host
// memory (what the copy proxy enqueues for each request). Per mode, REPS requests after WARM; prints the median, p10
// and p90 of: the cuMemcpyAsync call, the two cuStreamWriteValue64 calls, and (where the stream ran nothing else)
// the time from the enqueue's start until the host word shows the request done (end to end).
// Modes: idle-0 (the stream just finished its previous request), idle-100us / idle-1ms (the host waited that long
// after), busy (a 64 MiB copy is still running), gated (the stream is blocked on a cuStreamWaitValue64 of a host word,
// opened by a host store after the enqueue), idle-0 + spinning kernel (a kernel spins on GPU 0 meanwhile).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>
#include <dlfcn.h>

// libcuda through dlopen (no stub library on the build machine)
static CUresult (*pMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*pWrite64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static CUresult (*pWait64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static CUresult (*pErr)(CUresult, const char **);
static void loadDriver() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); exit(1); }
  pMemcpyAsync = (CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)) dlsym(h, "cuMemcpyAsync");
  pWrite64 = (CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int)) dlsym(h, "cuStreamWriteValue64_v2");
  pWait64 = (CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int)) dlsym(h, "cuStreamWaitValue64_v2");
  pErr = (CUresult (*)(CUresult, const char **)) dlsym(h, "cuGetErrorString");
  if (!pMemcpyAsync || !pWrite64 || !pWait64 || !pErr) { printf("dlsym failed\n"); exit(1); }
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define DK(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char *m; pErr(e, &m); printf("%s: %s\n", #x, m); exit(1); } } while (0)

static inline uint64_t now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void spinFor(uint64_t ns) { uint64_t e = now() + ns; while (now() < e) {} }

__global__ void spinKernel(volatile uint64_t *stop) { while (*stop == 0) { __nanosleep(100); } }

struct Stat { std::vector<double> v; void add(uint64_t ns) { v.push_back(ns / 1000.0); }
  void print(const char *what) { if (v.empty()) return; std::sort(v.begin(), v.end()); size_t n = v.size();
    printf("  %-14s median %8.2f us  p10 %8.2f  p90 %8.2f  max %8.2f\n", what, v[n / 2], v[n / 10], v[n * 9 / 10], v[n - 1]); } };

int main(int argc, char **argv) {
  loadDriver();
  int reps = argc > 1 ? atoi(argv[1]) : 200, warm = 20;
  int A = argc > 2 ? atoi(argv[2]) : 0, B = 1 - A; // A's copy stream copies into B's memory
  printf("copies from GPU %d into GPU %d\n", A, B);
  size_t big = 64ull << 20;
  CK(cudaSetDevice(B)); CK(cudaDeviceEnablePeerAccess(A, 0));
  char *dst; CK(cudaMalloc(&dst, big)); uint64_t *peerWord; CK(cudaMalloc(&peerWord, 64));
  CK(cudaSetDevice(A)); CK(cudaDeviceEnablePeerAccess(B, 0));
  char *src; CK(cudaMalloc(&src, big)); CK(cudaMemset(src, 1, big));
  volatile uint64_t *host; CK(cudaHostAlloc((void **) &host, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
  memset((void *) host, 0, 4096);
  volatile uint64_t *flag = host, *gate = host + 8, *stop = host + 16;
  cudaStream_t s, k; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&k, cudaStreamNonBlocking));
  CUstream cs = (CUstream) s;
  uint64_t seq = 0;
  auto request = [&](size_t bytes, Stat *copy, Stat *writes, uint64_t *t0out) {
    uint64_t t0 = now();
    DK(pMemcpyAsync((CUdeviceptr) dst, (CUdeviceptr) src, bytes, cs));
    uint64_t t1 = now();
    ++seq;
    DK(pWrite64(cs, (CUdeviceptr) peerWord, seq, 0));
    DK(pWrite64(cs, (CUdeviceptr) flag, seq, 0));
    uint64_t t2 = now();
    if (copy) copy->add(t1 - t0);
    if (writes) writes->add(t2 - t1);
    if (t0out) *t0out = t0;
  };
  auto waitDone = [&]() { while (*flag != seq) {} };
  const char *modes[] = {"idle-0", "idle-100us", "idle-1ms", "busy", "gated", "idle-0+kernel", "gated+kernel"};
  for (size_t bytes : {(size_t) 4096, big}) {
    for (int m = 0; m < 7; m++) {
      Stat copy, writes, e2e;
      bool kernel = m >= 5;
      if (kernel) { *stop = 0; spinKernel<<<1, 32, 0, k>>>(stop); CK(cudaGetLastError()); spinFor(100000); }
      for (int r = 0; r < warm + reps; r++) {
        bool rec = r >= warm;
        uint64_t t0, t3;
        if (m == 1) spinFor(100000);
        if (m == 2) spinFor(1000000);
        if (m == 3) { request(big, nullptr, nullptr, nullptr); }
        if (m == 4 || m == 6) { DK(pWait64(cs, (CUdeviceptr) gate, seq + 1, CU_STREAM_WAIT_VALUE_GEQ)); spinFor(50000); }
        request(bytes, rec ? &copy : nullptr, rec ? &writes : nullptr, &t0);
        if (m == 4 || m == 6) { *gate = seq; }
        waitDone();
        t3 = now();
        if (rec && m != 3) e2e.add(t3 - t0);
      }
      if (kernel) { *stop = 1; CK(cudaStreamSynchronize(k)); }
      printf("%s, %zu bytes, %d requests\n", modes[m], bytes, reps);
      copy.print("cuMemcpyAsync"); writes.print("2 writes"); e2e.print("end to end");
      fflush(stdout);
    }
  }
  CK(cudaStreamSynchronize(s));
  printf("done\n");
  return 0;
}
