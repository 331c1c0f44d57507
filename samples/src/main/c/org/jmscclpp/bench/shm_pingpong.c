/*
 * The C floor of `jmscclpp bench proxy`: the PortChannel ping-pong done the shortest way this
 * machine allows, so that the Java round trips can be read against it.
 *
 * Two processes (fork) share one anonymous MAP_SHARED mapping: a page of flags, then one in-place
 * buffer per process, each as large as the largest size asked for. One round trip of N ints:
 *   parent: stamp its buffer, memcpy N ints into the child's buffer, store the round's number
 *           into the child's flag (release); spin until its own flag holds the round (acquire);
 *           check the stamps the child put;
 *   child:  spin until its flag holds the round (acquire), check the parent's stamps, stamp its
 *           buffer, memcpy N ints into the parent's buffer, store the round into the parent's flag
 *           (release).
 * That is what a PortChannel ping-pong does (putWithSignal copies the ints and raises the peer's
 * token after them; wait spins on the token) without the proxies: the sender copies, the flag is
 * the semaphore. The stamp is the round's value in the first and the last int, so a stale or
 * missing copy fails the check. Flags sit on their own cache lines.
 *
 * The parent times every round with CLOCK_MONOTONIC; per size it prints one line:
 *   FLOOR ints=1024 iters=20000 warmup=5000 median_us=0.412 mean_us=0.455
 *
 * Usage: shm_pingpong INTS:ITERS:WARMUP [INTS:ITERS:WARMUP ...]   (ITERS >= 1, WARMUP >= 0)
 *
 * Waits spin with a pause instruction and yield the CPU every 64 spins (a few microseconds): with a
 * core each, the yield returns at once and the spin goes on; when both processes share a core (the
 * machine's other work took the rest), the peer runs soon instead of after a time slice. Every
 * wait ends after 30 s. Exit status: 0 success; 1 a wrong stamp, a wait past its
 * deadline or a child that failed, after a message on stderr; 2 bad arguments or no memory.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    LINE = 64,
    MAX_SIZES = 64,
    YIELD_EVERY = 64,
    WAIT_SECONDS = 30,
};

/* The values each side stamps: apart for the two sides, new every round. */
#define PARENT_BASE 0x10000000u
#define CHILD_BASE 0x20000000u

typedef struct {
    long ints;
    long iters;
    long warmup;
} size_spec;

/* One flag per cache line: the round a side may take next, and a failure any side reports. */
typedef struct {
    _Alignas(LINE) uint64_t to_child;
    _Alignas(LINE) uint64_t to_parent;
    _Alignas(LINE) uint64_t failed;
} flags;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until *flag holds round (acquire); 0 on success, -1 when the other side failed or time ran out. */
static int await_round(uint64_t *flag, uint64_t round, uint64_t *failed, const char *who) {
    uint64_t deadline = now_ns() + (uint64_t) WAIT_SECONDS * 1000000000u;
    for (unsigned spins = 1;; spins++) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == round) {
            return 0;
        }
        if (spins % YIELD_EVERY == 0) {
            if (__atomic_load_n(failed, __ATOMIC_ACQUIRE) != 0) {
                return -1;
            }
            if (now_ns() > deadline) {
                fprintf(stderr, "shm_pingpong: %s waited %d s for round %llu\n", who, WAIT_SECONDS,
                        (unsigned long long) round);
                __atomic_store_n(failed, 1, __ATOMIC_RELEASE);
                return -1;
            }
            sched_yield();
        } else {
            cpu_pause();
        }
    }
}

static void stamp(int32_t *buf, long ints, uint32_t value) {
    buf[0] = (int32_t) value;
    buf[ints - 1] = (int32_t) value;
}

static int stamped(const int32_t *buf, long ints, uint32_t value, const char *who, uint64_t *failed) {
    if (buf[0] == (int32_t) value && buf[ints - 1] == (int32_t) value) {
        return 1;
    }
    fprintf(stderr, "shm_pingpong: %s, %ld ints: found %d and %d, expected %d in the first and the last int\n",
            who, ints, buf[0], buf[ints - 1], (int32_t) value);
    __atomic_store_n(failed, 1, __ATOMIC_RELEASE);
    return 0;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *) a;
    uint64_t y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static int child_side(flags *f, int32_t *mine, int32_t *peer, const size_spec *sizes, int n_sizes) {
    uint64_t round = 0;
    for (int s = 0; s < n_sizes; s++) {
        long ints = sizes[s].ints;
        for (long i = 0; i < sizes[s].warmup + sizes[s].iters; i++) {
            round++;
            if (await_round(&f->to_child, round, &f->failed, "the child") != 0) {
                return 1;
            }
            if (!stamped(mine, ints, PARENT_BASE + (uint32_t) round, "the child", &f->failed)) {
                return 1;
            }
            stamp(mine, ints, CHILD_BASE + (uint32_t) round);
            memcpy(peer, mine, (size_t) ints * sizeof(int32_t));
            __atomic_store_n(&f->to_parent, round, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

static int parent_side(flags *f, int32_t *mine, int32_t *peer, const size_spec *sizes, int n_sizes) {
    uint64_t round = 0;
    for (int s = 0; s < n_sizes; s++) {
        long ints = sizes[s].ints;
        uint64_t *times = malloc((size_t) sizes[s].iters * sizeof(uint64_t));
        if (times == NULL) {
            fprintf(stderr, "shm_pingpong: no memory for %ld times\n", sizes[s].iters);
            __atomic_store_n(&f->failed, 1, __ATOMIC_RELEASE);
            return 1;
        }
        for (long i = 0; i < sizes[s].warmup + sizes[s].iters; i++) {
            round++;
            uint64_t t0 = now_ns();
            stamp(mine, ints, PARENT_BASE + (uint32_t) round);
            memcpy(peer, mine, (size_t) ints * sizeof(int32_t));
            __atomic_store_n(&f->to_child, round, __ATOMIC_RELEASE);
            if (await_round(&f->to_parent, round, &f->failed, "the parent") != 0
                    || !stamped(mine, ints, CHILD_BASE + (uint32_t) round, "the parent", &f->failed)) {
                free(times);
                return 1;
            }
            uint64_t t1 = now_ns();
            if (i >= sizes[s].warmup) {
                times[i - sizes[s].warmup] = t1 - t0;
            }
        }
        long n = sizes[s].iters;
        double sum = 0;
        for (long i = 0; i < n; i++) {
            sum += (double) times[i];
        }
        qsort(times, (size_t) n, sizeof(uint64_t), compare_u64);
        double median = n % 2 == 1 ? (double) times[n / 2] : ((double) times[n / 2 - 1] + (double) times[n / 2]) / 2;
        printf("FLOOR ints=%ld iters=%ld warmup=%ld median_us=%.4f mean_us=%.4f\n", ints, n, sizes[s].warmup,
               median / 1000.0, sum / (double) n / 1000.0);
        fflush(stdout);
        free(times);
    }
    return 0;
}

static int parse_size(const char *arg, size_spec *out) {
    char *end;
    errno = 0;
    out->ints = strtol(arg, &end, 10);
    if (errno != 0 || *end != ':' || out->ints < 1 || out->ints > (1L << 28)) {
        return -1;
    }
    out->iters = strtol(end + 1, &end, 10);
    if (errno != 0 || *end != ':' || out->iters < 1) {
        return -1;
    }
    out->warmup = strtol(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || out->warmup < 0) {
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    size_spec sizes[MAX_SIZES];
    int n_sizes = argc - 1;
    if (n_sizes < 1 || n_sizes > MAX_SIZES) {
        fprintf(stderr, "usage: shm_pingpong INTS:ITERS:WARMUP [INTS:ITERS:WARMUP ...] (1 to %d sizes)\n", MAX_SIZES);
        return 2;
    }
    long max_ints = 0;
    for (int s = 0; s < n_sizes; s++) {
        if (parse_size(argv[s + 1], &sizes[s]) != 0) {
            fprintf(stderr, "shm_pingpong: '%s' is not INTS:ITERS:WARMUP (INTS 1 to 2^28, ITERS >= 1, WARMUP >= 0)\n",
                    argv[s + 1]);
            return 2;
        }
        if (sizes[s].ints > max_ints) {
            max_ints = sizes[s].ints;
        }
    }
    size_t buffer_bytes = ((size_t) max_ints * sizeof(int32_t) + 4095) & ~(size_t) 4095;
    size_t total = 4096 + 2 * buffer_bytes;
    unsigned char *shared = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        fprintf(stderr, "shm_pingpong: mmap of %zu bytes failed: %s\n", total, strerror(errno));
        return 2;
    }
    /* both buffers touched before the fork: no page faults in the timed rounds */
    memset(shared, 0, total);
    flags *f = (flags *) shared;
    int32_t *parent_buf = (int32_t *) (shared + 4096);
    int32_t *child_buf = (int32_t *) (shared + 4096 + buffer_bytes);

    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "shm_pingpong: fork failed: %s\n", strerror(errno));
        return 2;
    }
    if (child == 0) {
        _exit(child_side(f, child_buf, parent_buf, sizes, n_sizes));
    }
    int result = parent_side(f, parent_buf, child_buf, sizes, n_sizes);
    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "shm_pingpong: waitpid failed: %s\n", strerror(errno));
            return 1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "shm_pingpong: the child ended with status 0x%x\n", status);
        return 1;
    }
    munmap(shared, total);
    return result;
}
