// Two processes, one per GPU, each enqueueing copy requests into the other GPU's memory (peer access) as the copy
// proxies of a 2-rank ce call do: cuMemcpyAsync of BYTES, then two cuStreamWriteValue64 (a word on the peer, a word in
// pinned host memory). Per round both processes wait at a barrier in shared memory, then enqueue at once ("together"),
// or only process 0 enqueues while process 1 waits ("alone"). Prints each process's median/p10/p90 of the
// cuMemcpyAsync call and of the two writes, and the end to end time until its host word shows the request done.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include <algorithm>
#include <atomic>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define DK(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { printf("%s: %d\n", #x, (int) e); exit(1); } } while (0)
static CUresult (*pMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*pWrite64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static inline uint64_t now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
struct Stat { std::vector<double> v; void add(uint64_t ns) { v.push_back(ns / 1000.0); }
  void print(int me, const char *mode, const char *what) { std::sort(v.begin(), v.end()); size_t n = v.size();
    printf("p%d %-9s %-14s median %8.2f us  p10 %8.2f  p90 %8.2f\n", me, mode, what, v[n / 2], v[n / 10], v[n * 9 / 10]); } };
struct Shared { std::atomic<long> arrive[2]; };

static size_t firstBytes = 0;  // > 0: the copy as two, the first of this many bytes (both enqueued before the writes)
static void run(int me, Shared *sh, int reps, size_t bytes) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  pMemcpyAsync = (CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)) dlsym(h, "cuMemcpyAsync");
  pWrite64 = (CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int)) dlsym(h, "cuStreamWriteValue64_v2");
  int peer = 1 - me;
  CK(cudaSetDevice(peer)); CK(cudaDeviceEnablePeerAccess(me, 0));
  char *dst; CK(cudaMalloc(&dst, bytes)); uint64_t *peerWord; CK(cudaMalloc(&peerWord, 64));
  CK(cudaSetDevice(me)); CK(cudaDeviceEnablePeerAccess(peer, 0));
  char *src; CK(cudaMalloc(&src, bytes));
  volatile uint64_t *flag; CK(cudaHostAlloc((void **) &flag, 4096, cudaHostAllocMapped)); *flag = 0;
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t seq = 0; long round = 0;
  for (int mode = 0; mode < 2; mode++) {
    Stat copy, writes, e2e;
    for (int r = 0; r < 20 + reps; r++) {
      ++round;
      sh->arrive[me].store(round); while (sh->arrive[peer].load() < round) {}
      bool act = mode == 1 || me == 0;
      if (act) {
        uint64_t t0 = now();
        if (firstBytes > 0 && firstBytes < bytes) {
          DK(pMemcpyAsync((CUdeviceptr) dst, (CUdeviceptr) src, firstBytes, (CUstream) s));
          DK(pMemcpyAsync((CUdeviceptr) dst + firstBytes, (CUdeviceptr) src + firstBytes, bytes - firstBytes, (CUstream) s));
        } else {
          DK(pMemcpyAsync((CUdeviceptr) dst, (CUdeviceptr) src, bytes, (CUstream) s));
        }
        uint64_t t1 = now();
        ++seq;
        DK(pWrite64((CUstream) s, (CUdeviceptr) peerWord, seq, 0));
        DK(pWrite64((CUstream) s, (CUdeviceptr) flag, seq, 0));
        uint64_t t2 = now();
        while (*flag != seq) {}
        uint64_t t3 = now();
        if (r >= 20) { copy.add(t1 - t0); writes.add(t2 - t1); e2e.add(t3 - t0); }
      }
      ++round;
      sh->arrive[me].store(round); while (sh->arrive[peer].load() < round) {}
    }
    const char *m = mode == 0 ? "alone" : "together";
    if (mode == 1 || me == 0) { copy.print(me, m, "cuMemcpyAsync"); writes.print(me, m, "2 writes"); e2e.print(me, m, "end to end"); }
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 200;
  size_t bytes = argc > 2 ? strtoull(argv[2], 0, 0) : (64ull << 20);
  firstBytes = argc > 3 ? strtoull(argv[3], 0, 0) : 0;
  Shared *sh = (Shared *) mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  sh->arrive[0] = 0; sh->arrive[1] = 0;
  printf("%zu bytes (first copy %zu), %d rounds\n", bytes, firstBytes, reps); fflush(stdout);
  pid_t c = fork();
  if (c == 0) { run(1, sh, reps, bytes); return 0; }
  run(0, sh, reps, bytes);
  int st; waitpid(c, &st, 0);
  printf("done\n");
  return 0;
}
