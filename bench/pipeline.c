/* (f) The Bobox request pipeline (DESIGN §2-§4): many concurrent requests, each a chain of
 * stages that run on different threads and pass batches of objects along. Each stage reads
 * its input, allocates its output (small objects plus one envelope of 4-200 KB) and a
 * scratch buffer it frees at once. Nothing a request allocated is freed before the request
 * ends; then the thread that finishes it frees everything, allocated on all threads. */
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>

#define NSTAGES 4
#define BATCHES 16                 /* batches per request */
#define OBJS 40                    /* small objects a stage adds to a batch */
#define INFLIGHT 16                /* concurrent requests */
#define LOGCAP (NSTAGES * (OBJS + 1))

struct request;
struct batch {
    struct batch *qnext;           /* worker queue link */
    struct batch *dnext;           /* request's finished-batch list */
    struct request *req;
    int stage, nout, nlog;
    unsigned char *out[OBJS];
    void *log[LOGCAP];
};

struct request {
    long id;
    atomic_int pending;
    _Atomic(struct batch *) done;
};

struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct batch *head, *tail;
} __attribute__((aligned(64)));

static int nthreads;
static long total_requests;
static struct queue *queues;
static atomic_long started, finished;
static atomic_int stop;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static void enqueue(int t, struct batch *b)
{
    struct queue *q = &queues[t];
    b->qnext = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->qnext = b;
    else
        q->head = b;
    q->tail = b;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static struct batch *dequeue(int t)
{
    struct queue *q = &queues[t];
    pthread_mutex_lock(&q->mu);
    while (!q->head && !atomic_load(&stop))
        pthread_cond_wait(&q->cv, &q->mu);
    struct batch *b = q->head;
    if (b) {
        q->head = b->qnext;
        if (!q->head)
            q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return b;
}

static void start_request(long id)
{
    struct request *r = xmalloc(sizeof *r);
    r->id = id;
    atomic_init(&r->pending, BATCHES);
    atomic_init(&r->done, NULL);
    for (int i = 0; i < BATCHES; i++) {
        struct batch *b = xmalloc(sizeof *b);
        b->req = r;
        b->stage = b->nout = b->nlog = 0;
        enqueue((int)(id % nthreads), b);
    }
}

static void maybe_start_next(void)
{
    long id = atomic_fetch_add(&started, 1);
    if (id < total_requests)
        start_request(id);
}

static void end_request(struct request *r)
{
    struct batch *b = atomic_load(&r->done);
    while (b) {
        struct batch *next = b->dnext;
        for (int i = 0; i < b->nlog; i++)
            free(b->log[i]);
        free(b);
        b = next;
    }
    free(r);
    if (atomic_fetch_add(&finished, 1) + 1 == total_requests) {
        pthread_mutex_lock(&done_mu);
        pthread_cond_signal(&done_cv);
        pthread_mutex_unlock(&done_mu);
    }
    maybe_start_next();
}

static void run_stage(struct batch *b, uint64_t *rs)
{
    uint64_t sum = 0;
    for (int i = 0; i < b->nout; i++)
        sum += b->out[i][0];
    size_t scratch_sz = 1024 + rng_next(rs) % 7168;
    unsigned char *scratch = xmalloc(scratch_sz);     /* stage-local, dies at once */
    memset(scratch, (int)sum, scratch_sz);
    sum += scratch[scratch_sz / 2];
    free(scratch);

    for (int i = 0; i < OBJS; i++) {
        size_t sz = 16 + rng_next(rs) % (2048 - 16 + 1);
        unsigned char *p = xmalloc(sz);
        memset(p, (int)(sum + (uint64_t)i), sz < 64 ? sz : 64);
        b->out[i] = p;
        b->log[b->nlog++] = p;
    }
    b->nout = OBJS;
    /* The envelope: 4 KB..200 KB, log-uniform. */
    size_t env = (size_t)4096 << (rng_next(rs) % 6);
    env += rng_next(rs) % env;
    if (env > 200 * 1024)
        env = 200 * 1024;
    unsigned char *e = xmalloc(env);
    for (size_t o = 0; o < env; o += 4096)
        e[o] = (unsigned char)sum;
    b->log[b->nlog++] = e;
    bench_sink += sum;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    uint64_t rs = rng_seed((uint64_t)t + 31);
    struct batch *b;
    while ((b = dequeue(t))) {
        run_stage(b, &rs);
        struct request *r = b->req;
        if (++b->stage < NSTAGES) {
            enqueue((int)((r->id + b->stage) % nthreads), b);
            continue;
        }
        struct batch *old = atomic_load(&r->done);
        do
            b->dnext = old;
        while (!atomic_compare_exchange_weak(&r->done, &old, b));
        if (atomic_fetch_sub(&r->pending, 1) == 1)
            end_request(r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double scale;
    bench_args(argc, argv, 4, &nthreads, &scale);
    total_requests = scaled(6000, scale, 16);
    queues = calloc((size_t)nthreads, sizeof *queues);
    for (int t = 0; t < nthreads; t++) {
        pthread_mutex_init(&queues[t].mu, NULL);
        pthread_cond_init(&queues[t].cv, NULL);
    }

    pthread_t th[nthreads];
    double t0 = now_s();
    bench_spawn_threads(th, nthreads, worker, NULL, 0);
    for (int i = 0; i < INFLIGHT; i++)
        maybe_start_next();
    pthread_mutex_lock(&done_mu);
    while (atomic_load(&finished) < total_requests)
        pthread_cond_wait(&done_cv, &done_mu);
    pthread_mutex_unlock(&done_mu);
    atomic_store(&stop, 1);
    for (int t = 0; t < nthreads; t++) {
        pthread_mutex_lock(&queues[t].mu);
        pthread_cond_broadcast(&queues[t].cv);
        pthread_mutex_unlock(&queues[t].mu);
    }
    bench_join_threads(th, nthreads, NULL);
    double secs = now_s() - t0;
    free(queues);
    bench_report("pipeline", nthreads, scale, secs, (double)total_requests, "requests/s", NULL);
    return 0;
}
