/* Shared helpers for the bobox-malloc benchmark workloads.
 * Every workload: NAME [threads] [scale]; prints one line
 *   RESULT workload=W threads=T scale=S secs=X throughput=Y unit=U ops=N [extra=...]
 * (N: the work units counted in Y, e.g. for scripts/bench/bench-instr.sh's instructions per op)
 * scale 1.0 is the full size (make bench-full); bench.sh passes smaller scales. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps secs seconds, resuming after signals: the timer of the fixed-time workloads. */
static inline void sleep_s(double secs)
{
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts))
        ;
}

/* xorshift64*: cheap, per-thread, no libc state shared between threads. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t rng_seed(uint64_t i)
{
    return 0x9E3779B97F4A7C15ULL * (i + 1) | 1;
}

static inline void die(const char *msg)
{
    fprintf(stderr, "bench: %s\n", msg);
    exit(2);
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        die("out of memory");
    return p;
}

/* argv[1] = threads, argv[2] = scale. */
static inline void bench_args(int argc, char **argv, int def_threads, int *threads, double *scale)
{
    *threads = argc > 1 ? atoi(argv[1]) : def_threads;
    *scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (*threads < 1 || *threads > 1024 || !(*scale > 0)) {
        fprintf(stderr, "usage: %s [threads] [scale>0]\n", argv[0]);
        exit(2);
    }
}

/* Scaled count, never below lo. */
static inline long scaled(double base, double scale, long lo)
{
    long n = (long)(base * scale);
    return n < lo ? lo : n;
}

static inline void bench_report(const char *name, int threads, double scale, double secs,
                                double ops, const char *unit, const char *extra)
{
    printf("RESULT workload=%s threads=%d scale=%g secs=%.6f throughput=%.6g unit=%s ops=%.0f%s%s\n",
           name, threads, scale, secs, secs > 0 ? ops / secs : 0.0, unit, ops,
           extra ? " " : "", extra ? extra : "");
    fflush(stdout);
}

/* Thread i of bench_spawn_threads gets &args[i] (elements of `size` bytes), or with args
 * NULL its index i as a pointer. */
typedef void *(*bench_thread_fn)(void *);

/* Starts n threads running fn into th[0..n-1]; dies if one cannot start. */
static inline void bench_spawn_threads(pthread_t *th, int n, bench_thread_fn fn, void *args, size_t size)
{
    for (int i = 0; i < n; i++) {
        void *arg = args ? (char *)args + (size_t)i * size : (void *)(intptr_t)i;
        if (pthread_create(&th[i], NULL, fn, arg))
            die("pthread_create");
    }
}

/* Waits for th[0..n-1]; results, unless NULL, gets what each returned. */
static inline void bench_join_threads(pthread_t *th, int n, void **results)
{
    for (int i = 0; i < n; i++)
        if (pthread_join(th[i], results ? &results[i] : NULL))
            die("pthread_join");
}

/* bench_spawn_threads, then bench_join_threads: the timed part of most workloads. */
static inline void bench_run_threads(int n, bench_thread_fn fn, void *args, size_t size, void **results)
{
    pthread_t th[n];
    bench_spawn_threads(th, n, fn, args, size);
    bench_join_threads(th, n, results);
}

/* Defeats dead-store elimination of writes into benchmark objects. */
static volatile uint64_t bench_sink;

#endif
