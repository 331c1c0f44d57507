/*
 * The C side of `jmscclpp bench native`: what each hot CUDA driver call costs when C calls it, so that
 * the cost from Java (JNA, FFM) can be read against it in the same run, on the same GPU.
 *
 * The driver library is opened with dlopen (JMSCCLPP_CUDA_LIBRARY, else libcuda.so.1) and every call
 * goes through the pointer dlsym gives for the exported symbol: the same entry points JNA and the
 * foreign-function API bind, called the way a PLT call would be (one indirect jump). No CUDA header
 * or toolkit is needed to build it: the few prototypes are declared below.
 *
 * The calls, in this order, on GPU ORDINAL's primary context, a non-blocking stream:
 *   cuEventQuery             on an event whose work completed (returns CUDA_SUCCESS)
 *   cuCtxSetCurrent          of the context already current
 *   cuStreamWriteValue64_v2  one 8-byte write enqueued (skipped where 64-bit stream memory ops are off)
 *   cuMemcpyDtoDAsync_v2     one 64-byte device-to-device copy enqueued
 *   cuLaunchKernel           one launch of an empty kernel (1 block of 1 thread, one u64 argument)
 *                            enqueued; the kernel is PTX JIT-compiled by the driver
 *   native_calls_nothing     an empty function of this file (returns 0), called through a pointer as the
 *                            driver's are: what a call itself costs, the floor under every binding
 * Each call is timed over ROUNDS rounds of ITERS calls, after one untimed round; per round the time
 * per call, with CLOCK_MONOTONIC around the calls. Calls that enqueue work are made in batches of 512
 * with the context synchronized between batches, outside the timed part, so that no call waits for
 * room in the stream's queue. Per call one line:
 *   CALL name=cuEventQuery iters=100000 rounds=7 median_ns=123.4 min_ns=120.1
 * or, for a call this GPU cannot make:
 *   SKIP name=cuStreamWriteValue64_v2 reason=...
 *
 * Usage: native_calls ORDINAL ITERS ROUNDS     (ITERS >= 1, ROUNDS >= 1)
 * Exit status: 0 success; 1 a driver call failed (message on stderr); 2 bad arguments.
 *
 * Built with -shared -fPIC -DNATIVE_CALLS_LIBRARY the same file is a library for the Java side's JVM, which
 * times the same loops in its own process, in rounds alternated with its own: native_calls_bind() opens the
 * driver as main does (0, or 1 with the reason on stderr), native_calls_use(...) hands it the Java side's
 * objects, native_calls_timed(which, n) returns the nanoseconds n calls took, and Java calls
 * native_calls_nothing itself for the floor.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef NATIVE_CALLS_LIBRARY
#define EXPORTED __attribute__((visibility("default")))
#else
#define EXPORTED
#endif

typedef int CUresult;
typedef uint64_t CUdeviceptr;
typedef void *CUhandle;

#define CUDA_SUCCESS 0
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DISABLE_TIMING 2
#define CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS 122
#define BATCH 512
#define COPY_BYTES 64

#ifndef NATIVE_CALLS_LIBRARY
static const char PTX[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry jmscclpp_empty(.param .u64 jmscclpp_empty_param_0)\n"
    "{\n"
    "    ret;\n"
    "}\n";
#endif

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDeviceGetAttribute)(int *, int, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUhandle *, int);
static CUresult (*cuDevicePrimaryCtxRelease_v2)(int);
static CUresult (*cuCtxSetCurrent)(CUhandle);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuStreamCreate)(CUhandle *, unsigned);
static CUresult (*cuStreamDestroy_v2)(CUhandle);
static CUresult (*cuEventCreate)(CUhandle *, unsigned);
static CUresult (*cuEventDestroy_v2)(CUhandle);
static CUresult (*cuEventRecord)(CUhandle, CUhandle);
static CUresult (*cuEventQuery)(CUhandle);
static CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree_v2)(CUdeviceptr);
static CUresult (*cuStreamWriteValue64_v2)(CUhandle, CUdeviceptr, uint64_t, unsigned);
static CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUhandle);
static CUresult (*cuModuleLoadData)(CUhandle *, const void *);
static CUresult (*cuModuleUnload)(CUhandle);
static CUresult (*cuModuleGetFunction)(CUhandle *, CUhandle, const char *);
static CUresult (*cuLaunchKernel)(CUhandle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUhandle, void **, void **);
static CUresult (*cuGetErrorName)(CUresult, const char **);

static void *library;

/* the floor: an empty function, never inlined or analysed across (each call is a real call), and the
 * pointer it is called through, as the driver's entry points are */
EXPORTED __attribute__((noinline, noipa)) int native_calls_nothing(int64_t argument) {
    (void) argument;
    return 0;
}
static int (*nothing)(int64_t);

static void *symbol(const char *name) {
    void *p = dlsym(library, name);
    if (p == NULL) {
        fprintf(stderr, "native_calls: the driver library exports no %s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static void check(CUresult r, const char *call) {
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        if (cuGetErrorName != NULL) {
            cuGetErrorName(r, &name);
        }
        fprintf(stderr, "native_calls: %s failed: %s (%d)\n", call, name, r);
        exit(1);
    }
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e9 + (double) t.tv_nsec;
}

/* the state every measured call uses */
static CUhandle context, stream, event, function;
static CUdeviceptr word, src, dst;
static uint64_t counter;
static void *kernel_params[1];

enum call { EVENT_QUERY, CTX_SET_CURRENT, WRITE_VALUE, MEMCPY, LAUNCH, NOTHING };
static const char *const NAMES[] = {
    "cuEventQuery", "cuCtxSetCurrent", "cuStreamWriteValue64_v2", "cuMemcpyDtoDAsync_v2", "cuLaunchKernel",
    "native_calls_nothing"
};

/* n calls of `which`, timed; returns the nanoseconds the calls took (drains outside) */
static double timed_calls(enum call which, long n) {
    double elapsed = 0;
    CUresult failure = CUDA_SUCCESS;
    if (which == EVENT_QUERY || which == CTX_SET_CURRENT || which == NOTHING) {
        double start = now_ns();
        if (which == EVENT_QUERY) {
            for (long i = 0; i < n; i++) {
                CUresult r = cuEventQuery(event);
                failure = failure == CUDA_SUCCESS ? r : failure;
            }
        } else if (which == NOTHING) {
            for (long i = 0; i < n; i++) {
                CUresult r = nothing((int64_t) i);
                failure = failure == CUDA_SUCCESS ? r : failure;
            }
        } else {
            for (long i = 0; i < n; i++) {
                CUresult r = cuCtxSetCurrent(context);
                failure = failure == CUDA_SUCCESS ? r : failure;
            }
        }
        elapsed = now_ns() - start;
        check(failure, NAMES[which]);
        return elapsed;
    }
    for (long done = 0; done < n;) {
        long batch = n - done < BATCH ? n - done : BATCH;
        double start = now_ns();
        switch (which) {
            case WRITE_VALUE:
                for (long i = 0; i < batch; i++) {
                    CUresult r = cuStreamWriteValue64_v2(stream, word, ++counter, 0);
                    failure = failure == CUDA_SUCCESS ? r : failure;
                }
                break;
            case MEMCPY:
                for (long i = 0; i < batch; i++) {
                    CUresult r = cuMemcpyDtoDAsync_v2(dst, src, COPY_BYTES, stream);
                    failure = failure == CUDA_SUCCESS ? r : failure;
                }
                break;
            default:
                for (long i = 0; i < batch; i++) {
                    CUresult r = cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, kernel_params, NULL);
                    failure = failure == CUDA_SUCCESS ? r : failure;
                }
                break;
        }
        elapsed += now_ns() - start;
        check(failure, NAMES[which]);
        check(cuCtxSynchronize(), "cuCtxSynchronize");
        done += batch;
    }
    return elapsed;
}

#ifndef NATIVE_CALLS_LIBRARY

static int compare(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void measure(enum call which, long iters, int rounds) {
    double *per_call = malloc(sizeof(double) * (size_t) rounds);
    if (per_call == NULL) {
        fprintf(stderr, "native_calls: out of memory\n");
        exit(2);
    }
    timed_calls(which, iters);
    for (int r = 0; r < rounds; r++) {
        per_call[r] = timed_calls(which, iters) / (double) iters;
    }
    qsort(per_call, (size_t) rounds, sizeof(double), compare);
    double median = rounds % 2 == 1 ? per_call[rounds / 2] : (per_call[rounds / 2 - 1] + per_call[rounds / 2]) / 2;
    printf("CALL name=%s iters=%ld rounds=%d median_ns=%.2f min_ns=%.2f\n", NAMES[which], iters, rounds, median,
           per_call[0]);
    fflush(stdout);
    free(per_call);
}

#endif

/* opens the driver library and binds every entry point; 0, or 1 with the reason on stderr */
static int bind_driver(void) {
    const char *path = getenv("JMSCCLPP_CUDA_LIBRARY");
    if (path == NULL || path[0] == '\0') {
        path = "libcuda.so.1";
    }
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "native_calls: cannot open %s: %s\n", path, dlerror());
        return 1;
    }
    cuGetErrorName = symbol("cuGetErrorName");
    cuInit = symbol("cuInit");
    cuDeviceGet = symbol("cuDeviceGet");
    cuDeviceGetAttribute = symbol("cuDeviceGetAttribute");
    cuDevicePrimaryCtxRetain = symbol("cuDevicePrimaryCtxRetain");
    cuDevicePrimaryCtxRelease_v2 = symbol("cuDevicePrimaryCtxRelease_v2");
    cuCtxSetCurrent = symbol("cuCtxSetCurrent");
    cuCtxSynchronize = symbol("cuCtxSynchronize");
    cuStreamCreate = symbol("cuStreamCreate");
    cuStreamDestroy_v2 = symbol("cuStreamDestroy_v2");
    cuEventCreate = symbol("cuEventCreate");
    cuEventDestroy_v2 = symbol("cuEventDestroy_v2");
    cuEventRecord = symbol("cuEventRecord");
    cuEventQuery = symbol("cuEventQuery");
    cuMemAlloc_v2 = symbol("cuMemAlloc_v2");
    cuMemFree_v2 = symbol("cuMemFree_v2");
    cuStreamWriteValue64_v2 = symbol("cuStreamWriteValue64_v2");
    cuMemcpyDtoDAsync_v2 = symbol("cuMemcpyDtoDAsync_v2");
    cuModuleLoadData = symbol("cuModuleLoadData");
    cuModuleUnload = symbol("cuModuleUnload");
    cuModuleGetFunction = symbol("cuModuleGetFunction");
    cuLaunchKernel = symbol("cuLaunchKernel");
    nothing = native_calls_nothing;
    return 0;

}

#ifdef NATIVE_CALLS_LIBRARY

EXPORTED int native_calls_bind(void) {
    return bind_driver();
}

/* the Java side's objects: its context (current on the calling thread), stream, completed event, empty kernel and
 * device words */
EXPORTED void native_calls_use(CUhandle ctx, CUhandle strm, CUhandle evt, CUhandle fn, CUdeviceptr w, CUdeviceptr s,
                               CUdeviceptr d) {
    context = ctx;
    stream = strm;
    event = evt;
    function = fn;
    word = w;
    src = s;
    dst = d;
    kernel_params[0] = &word;
}

/* the nanoseconds n calls of `which` took (as the executable times them); a failed call ends the process */
EXPORTED double native_calls_timed(int which, long n) {
    return timed_calls((enum call) which, n);
}

#else

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: native_calls ORDINAL ITERS ROUNDS\n");
        return 2;
    }
    int ordinal = atoi(argv[1]);
    long iters = atol(argv[2]);
    int rounds = atoi(argv[3]);
    if (ordinal < 0 || iters < 1 || rounds < 1) {
        fprintf(stderr, "native_calls: bad arguments (ORDINAL >= 0, ITERS >= 1, ROUNDS >= 1)\n");
        return 2;
    }
    if (bind_driver() != 0) {
        return 1;
    }

    int device;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(cuMemAlloc_v2(&word, 8), "cuMemAlloc_v2");
    check(cuMemAlloc_v2(&src, COPY_BYTES), "cuMemAlloc_v2");
    check(cuMemAlloc_v2(&dst, COPY_BYTES), "cuMemAlloc_v2");
    CUhandle module;
    check(cuModuleLoadData(&module, PTX), "cuModuleLoadData");
    check(cuModuleGetFunction(&function, module, "jmscclpp_empty"), "cuModuleGetFunction");
    kernel_params[0] = &word;
    check(cuEventRecord(event, stream), "cuEventRecord");
    check(cuCtxSynchronize(), "cuCtxSynchronize");

    int mem_ops = 0;
    check(cuDeviceGetAttribute(&mem_ops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device),
          "cuDeviceGetAttribute");
    for (int which = EVENT_QUERY; which <= NOTHING; which++) {
        if (which == WRITE_VALUE && !mem_ops) {
            printf("SKIP name=%s reason=64-bit stream memory operations are off on this GPU\n", NAMES[which]);
            continue;
        }
        measure((enum call) which, iters, rounds);
    }

    check(cuModuleUnload(module), "cuModuleUnload");
    cuMemFree_v2(dst);
    cuMemFree_v2(src);
    cuMemFree_v2(word);
    cuEventDestroy_v2(event);
    cuStreamDestroy_v2(stream);
    cuDevicePrimaryCtxRelease_v2(device);
    return 0;
}

#endif
