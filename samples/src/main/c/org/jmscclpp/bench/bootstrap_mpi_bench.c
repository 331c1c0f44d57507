/*
 * Open MPI baseline for `jmscclpp bench bootstrap`.
 *
 * Measures the bootstrap-sized operations of the jmscclpp TcpBootstrap with MPI over the current
 * world, using the same method as the Java side so that the two sets of numbers compare:
 *   - before every timed iteration an MPI_Barrier aligns the ranks;
 *   - each rank times its own call with CLOCK_MONOTONIC;
 *   - per iteration the slowest rank counts (MPI_MAX over ranks, reduced to rank 0 at the end);
 *   - the reported number is the median over the iterations that follow the warm-up.
 *
 * Usage: bootstrap_mpi_bench [--iters N] [--warmup W]
 *
 * Rank 0 prints one line per operation on stdout:
 *   MPI op=allgather_8B n=4 median_us=12.345
 *   MPI op=sendrecv_bw_1MiB n=2 value_GBps=1.234      (GB = 1e9 bytes)
 * The point-to-point rows (sendrecv_rtt_8B, sendrecv_bw_1MiB) exist only when the world has two ranks.
 *
 * Every operation is run once untimed with checked contents before it is measured; a wrong value
 * makes every rank exit with status 1 after a message on stderr. Bad arguments exit with status 2.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    SMALL_BYTES = 8,
    MEDIUM_BYTES = 64 * 1024,
    LARGE_BYTES = 1024 * 1024,
    TAG_DATA = 1,
    TAG_REPLY = 2,
};

/* Buffers shared by all operations, sized for the largest of them. */
typedef struct {
    int rank;
    int size;
    unsigned char *send;  /* LARGE_BYTES */
    unsigned char *recv;  /* max(LARGE_BYTES, MEDIUM_BYTES * size) */
} bench_ctx;

/* One operation: runs the call once; returns the number of wrong bytes seen when check != 0. */
typedef long (*bench_op)(bench_ctx *ctx, int check);

/* The byte every rank expects at offset i of rank r's contribution. */
static unsigned char pattern(int r, size_t i) {
    return (unsigned char) ((size_t) r * 131u + i * 7u + 1u);
}

static void fill(unsigned char *buf, size_t len, int r) {
    for (size_t i = 0; i < len; i++) {
        buf[i] = pattern(r, i);
    }
}

static long count_wrong(const unsigned char *buf, size_t len, int r) {
    long wrong = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != pattern(r, i)) {
            wrong++;
        }
    }
    return wrong;
}

static long allgather(bench_ctx *ctx, size_t bytes, int check) {
    if (check) {
        fill(ctx->send, bytes, ctx->rank);
        memset(ctx->recv, 0, bytes * (size_t) ctx->size);
    }
    MPI_Allgather(ctx->send, (int) bytes, MPI_BYTE, ctx->recv, (int) bytes, MPI_BYTE, MPI_COMM_WORLD);
    long wrong = 0;
    if (check) {
        for (int r = 0; r < ctx->size; r++) {
            wrong += count_wrong(ctx->recv + (size_t) r * bytes, bytes, r);
        }
    }
    return wrong;
}

static long op_allgather_small(bench_ctx *ctx, int check) {
    return allgather(ctx, SMALL_BYTES, check);
}

static long op_allgather_medium(bench_ctx *ctx, int check) {
    return allgather(ctx, MEDIUM_BYTES, check);
}

static long op_barrier(bench_ctx *ctx, int check) {
    (void) ctx;
    (void) check;
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

static long op_broadcast(bench_ctx *ctx, int check) {
    unsigned char *buf = ctx->rank == 0 ? ctx->send : ctx->recv;
    if (check) {
        if (ctx->rank == 0) {
            fill(buf, LARGE_BYTES, 0);
        } else {
            memset(buf, 0, LARGE_BYTES);
        }
    }
    MPI_Bcast(buf, LARGE_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
    return check ? count_wrong(buf, LARGE_BYTES, 0) : 0;
}

/*
 * Rank 0 sends `bytes` to rank 1, rank 1 answers with `reply` bytes. Each side checks what it
 * received: rank 1 the request (pattern of rank 0), rank 0 the reply (pattern of rank 1).
 */
static long ping(bench_ctx *ctx, size_t bytes, size_t reply, int check) {
    if (ctx->rank == 0) {
        if (check) {
            fill(ctx->send, bytes, 0);
            memset(ctx->recv, 0, reply);
        }
        MPI_Send(ctx->send, (int) bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(ctx->recv, (int) reply, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return check ? count_wrong(ctx->recv, reply, 1) : 0;
    }
    if (ctx->rank == 1) {
        if (check) {
            fill(ctx->send, reply, 1);
            memset(ctx->recv, 0, bytes);
        }
        MPI_Recv(ctx->recv, (int) bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(ctx->send, (int) reply, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
        return check ? count_wrong(ctx->recv, bytes, 0) : 0;
    }
    return 0;
}

static long op_sendrecv_rtt(bench_ctx *ctx, int check) {
    return ping(ctx, SMALL_BYTES, SMALL_BYTES, check);
}

static long op_sendrecv_bw(bench_ctx *ctx, int check) {
    return ping(ctx, LARGE_BYTES, 1, check);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *) a;
    double y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Median of values[0..count); sorts values in place. */
static double median(double *values, int count) {
    qsort(values, (size_t) count, sizeof(double), compare_double);
    if (count % 2 == 1) {
        return values[count / 2];
    }
    return (values[count / 2 - 1] + values[count / 2]) / 2.0;
}

/*
 * Checks the operation once, then times warmup + iters runs. Returns 0 and stores the median
 * (µs, slowest rank per iteration) in *median_us on rank 0; returns -1 on every rank when some
 * rank saw wrong contents.
 */
static int measure(bench_ctx *ctx, const char *name, bench_op op, int iters, int warmup,
                   double *times, double *max_times, double *median_us) {
    long wrong = op(ctx, 1);
    long wrong_total = 0;
    MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrong_total != 0) {
        if (wrong != 0) {
            fprintf(stderr, "check failed: op=%s rank=%d: %ld wrong bytes received\n", name, ctx->rank, wrong);
        }
        return -1;
    }
    for (int i = 0; i < warmup + iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = now_us();
        op(ctx, 0);
        double elapsed = now_us() - start;
        if (i >= warmup) {
            times[i - warmup] = elapsed;
        }
    }
    MPI_Reduce(times, max_times, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (ctx->rank == 0) {
        *median_us = median(max_times, iters);
    }
    return 0;
}

/* Parses a non-negative int option value; returns -1 when it is not one. */
static int parse_count(const char *text) {
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > 100000000L) {
        return -1;
    }
    return (int) value;
}

/* Parses the options; on error rank 0 alone explains, so the message appears once. */
static int parse_args(int argc, char **argv, int rank, int *iters, int *warmup) {
    FILE *err = rank == 0 ? stderr : NULL;
    for (int i = 1; i < argc; i++) {
        int *target = NULL;
        if (strcmp(argv[i], "--iters") == 0) {
            target = iters;
        } else if (strcmp(argv[i], "--warmup") == 0) {
            target = warmup;
        } else {
            if (err != NULL) {
                fprintf(err, "unknown argument '%s'; usage: %s [--iters N] [--warmup W]\n", argv[i], argv[0]);
            }
            return -1;
        }
        if (i + 1 >= argc || (*target = parse_count(argv[i + 1])) < 0) {
            if (err != NULL) {
                fprintf(err, "%s needs a non-negative integer\n", argv[i]);
            }
            return -1;
        }
        i++;
    }
    if (*iters < 1) {
        if (err != NULL) {
            fprintf(err, "--iters must be at least 1\n");
        }
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    bench_ctx ctx;
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

    int iters = 100;
    int warmup = 10;
    if (parse_args(argc, argv, ctx.rank, &iters, &warmup) != 0) {
        MPI_Finalize();
        return 2;
    }

    size_t gathered = (size_t) MEDIUM_BYTES * (size_t) ctx.size;
    ctx.send = malloc(LARGE_BYTES);
    ctx.recv = malloc(gathered > LARGE_BYTES ? gathered : LARGE_BYTES);
    double *times = malloc(sizeof(double) * (size_t) iters);
    double *max_times = malloc(sizeof(double) * (size_t) iters);
    if (ctx.send == NULL || ctx.recv == NULL || times == NULL || max_times == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", ctx.rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }

    struct {
        const char *name;
        bench_op op;
        int pairs_only;
        size_t bandwidth_bytes; /* 0: report the median in µs */
    } ops[] = {
        {"allgather_8B", op_allgather_small, 0, 0},
        {"allgather_64KiB", op_allgather_medium, 0, 0},
        {"barrier", op_barrier, 0, 0},
        {"broadcast_1MiB", op_broadcast, 0, 0},
        {"sendrecv_rtt_8B", op_sendrecv_rtt, 1, 0},
        {"sendrecv_bw_1MiB", op_sendrecv_bw, 1, LARGE_BYTES},
    };

    int status = 0;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        if (ops[k].pairs_only && ctx.size != 2) {
            continue;
        }
        double median_us = 0.0;
        if (measure(&ctx, ops[k].name, ops[k].op, iters, warmup, times, max_times, &median_us) != 0) {
            status = 1;
            break;
        }
        if (ctx.rank == 0) {
            if (ops[k].bandwidth_bytes != 0) {
                double gbps = (double) ops[k].bandwidth_bytes / (median_us * 1e-6) / 1e9;
                printf("MPI op=%s n=%d value_GBps=%.3f\n", ops[k].name, ctx.size, gbps);
            } else {
                printf("MPI op=%s n=%d median_us=%.3f\n", ops[k].name, ctx.size, median_us);
            }
            fflush(stdout);
        }
    }

    free(max_times);
    free(times);
    free(ctx.recv);
    free(ctx.send);
    MPI_Finalize();
    return status;
}
