/* field_work: a deterministic malloc workload for the field tests (test/system/field_*.sh).
 * Usage: field_work [THREADS] [year]
 * Each thread allocates small, medium and large objects, grows some with realloc, hands half
 * of them to the next thread to free, and sums their contents; the output is the same with
 * any allocator. "year" also prints the year of time() and of clock_gettime (faketime). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBJECTS 4000
#define ROUNDS 3

typedef struct worker {
    int id;
    uint64_t sum;
    unsigned char *handed[OBJECTS / 2]; /* freed by the next thread */
    pthread_barrier_t *barrier;
    struct worker *next;
} worker_t;

static size_t size_of(int id, int i) {
    unsigned x = (unsigned)(i * 2654435761u + (unsigned)id * 40503u);
    if (i % 997 == 0) return (size_t)(1 << 20) + x % 65536; /* large */
    if (i % 61 == 0) return 4096 + x % 60000;                /* medium */
    return 1 + x % 700;                                       /* small */
}

static uint64_t fill_and_sum(unsigned char *p, size_t n, int seed) {
    uint64_t s = 0;
    for (size_t k = 0; k < n; k += 61) {
        p[k] = (unsigned char)(k + (size_t)seed);
        s += p[k];
    }
    return s;
}

static void *work(void *arg) {
    worker_t *w = arg;
    static __thread unsigned char *objs[OBJECTS];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < OBJECTS; i++) {
            size_t n = size_of(w->id, i + round);
            objs[i] = malloc(n);
            if (!objs[i]) {
                fprintf(stderr, "malloc(%zu) failed\n", n);
                exit(2);
            }
            w->sum += fill_and_sum(objs[i], n, i);
        }
        for (int i = 0; i < OBJECTS; i += 7) { /* grow and shrink across size classes */
            size_t n = size_of(w->id, i + round) * 3 + 100;
            unsigned char *q = realloc(objs[i], n);
            if (!q) exit(3);
            objs[i] = q;
            w->sum += fill_and_sum(q, n, i);
        }
        for (int i = 0; i < OBJECTS; i++) {
            if (i % 2)
                free(objs[i]);
            else
                w->handed[i / 2] = objs[i];
        }
        pthread_barrier_wait(w->barrier);
        /* the previous thread's objects: frees from a thread that did not allocate them */
        worker_t *prev = w->next;
        for (int i = 0; i < OBJECTS / 2; i++) {
            w->sum += prev->handed[i][0];
            free(prev->handed[i]);
        }
        pthread_barrier_wait(w->barrier);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "usage: field_work [THREADS 1-64] [year]\n");
        return 2;
    }
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    worker_t *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    for (int t = 0; t < threads; t++) {
        w[t].id = t;
        w[t].barrier = &barrier;
        w[t].next = &w[(t + threads - 1) % threads]; /* frees the previous one's */
    }
    for (int t = 1; t < threads; t++) pthread_create(&tid[t], NULL, work, &w[t]);
    work(&w[0]);
    uint64_t total = w[0].sum;
    for (int t = 1; t < threads; t++) {
        pthread_join(tid[t], NULL);
        total += w[t].sum;
    }
    printf("threads=%d sum=%llu\n", threads, (unsigned long long)total);
    if (argc > 2 && !strcmp(argv[2], "year")) {
        time_t now = time(NULL);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm a, b;
        gmtime_r(&now, &a);
        gmtime_r(&ts.tv_sec, &b);
        printf("year=%d clock_gettime_year=%d\n", a.tm_year + 1900, b.tm_year + 1900);
    }
    free(w);
    free(tid);
    return 0;
}
