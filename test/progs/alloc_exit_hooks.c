/* alloc_exit_hooks: malloc/free from the awkward places of a process's life, plus libc's own
 * internal allocations, with deterministic output (compared with and without the preload by
 * test/system/alloc_exit_hooks.sh).
 *   - a constructor that runs before main allocates and registers an atexit handler
 *   - pthread-key destructors that free, allocate and re-arm the key (second iteration)
 *   - OpenMP worker threads (libgomp) that allocate and free across threads
 *   - libc-internal allocations: strdup, asprintf, open_memstream, getline, qsort, regcomp,
 *     opendir, fopen, dlopen/dlsym/dlclose, setlocale, large printf
 *   - atexit handlers (registered before and during main) that verify, free and allocate
 * stderr says whether bobox answered ("bobox: active" / "bobox: absent").
 * Exit status 0 when every check passed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <locale.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errors;
#define CHECK(cond) do { if (!(cond)) { errors++; printf("check failed: %s (line %d)\n", #cond, __LINE__); } } while (0)

static void fillp(unsigned char *p, size_t n, unsigned seed) { for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7); }
static int okp(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) if (p[i] != (unsigned char)(seed + i * 7)) return 0;
    return 1;
}

/* ---- before main ---- */
static unsigned char *early_buf;
static char *early_str;
static void atexit_first_registered(void)
{
    /* runs last: after main's atexit handler */
    int ok = early_buf && okp(early_buf, 300000, 11);
    free(early_buf);
    free(early_str);
    void *p = malloc(1 << 20);
    memset(p, 1, 1 << 20);
    free(p);
    printf("atexit(before main): %s\n", ok ? "ok" : "CORRUPT");
    fflush(stdout);
    if (!ok) _exit(3);
}
__attribute__((constructor(101))) static void early(void)
{
    early_buf = malloc(300000);
    fillp(early_buf, 300000, 11);
    early_str = strdup("allocated in a constructor");
    atexit(atexit_first_registered);
}

/* ---- pthread keys ---- */
static pthread_key_t key;
static int key_calls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
struct kv { unsigned char *buf; size_t n; unsigned seed; int round; };
static void key_dtor(void *v)
{
    struct kv *k = v;
    int ok = okp(k->buf, k->n, k->seed);
    free(k->buf);
    void *tmp = calloc(1, 70000);
    free(tmp);
    if (k->round == 0) {
        struct kv *again = malloc(sizeof *again);
        again->n = 20000;
        again->buf = malloc(again->n);
        again->seed = k->seed + 1;
        again->round = 1;
        fillp(again->buf, again->n, again->seed);
        pthread_setspecific(key, again);
    }
    free(k);
    pthread_mutex_lock(&mu);
    key_calls++;
    if (!ok) errors++;
    pthread_mutex_unlock(&mu);
}
static void *thread_fn(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    struct kv *k = malloc(sizeof *k);
    k->n = 100 + id * 1000;
    k->buf = malloc(k->n);
    k->seed = id;
    k->round = 0;
    fillp(k->buf, k->n, k->seed);
    pthread_setspecific(key, k);
    /* returned object, freed by the main thread after join */
    char *ret;
    if (asprintf(&ret, "thread %u done", id) < 0) return NULL;
    return ret;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void atexit_in_main(void)
{
    char *s = malloc(5000);
    snprintf(s, 5000, "atexit(main): key destructor calls %d, errors %d", key_calls, errors);
    puts(s);
    free(s);
    fflush(stdout);
}

int main(void)
{
    atexit(atexit_in_main);
    setlocale(LC_ALL, "C.UTF-8");

    /* pthread keys: 16 threads, two destructor iterations each */
    pthread_key_create(&key, key_dtor);
    pthread_t th[16];
    for (unsigned i = 0; i < 16; i++) pthread_create(&th[i], NULL, thread_fn, (void *)(uintptr_t)i);
    int done = 0;
    for (unsigned i = 0; i < 16; i++) {
        char *r = NULL;
        pthread_join(th[i], (void **)&r);
        if (r && strncmp(r, "thread ", 7) == 0) done++;
        free(r);
    }
    printf("threads joined: %d, key destructor calls: %d\n", done, key_calls);
    CHECK(key_calls == 32);

    /* OpenMP: allocate in one iteration, free in another (different threads) */
    enum { N = 20000 };
    static void *slots[N];
    long sum = 0;
#pragma omp parallel for schedule(dynamic, 64)
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(i % 3000) + (i % 500 == 0 ? 200000 : 0);
        slots[i] = malloc(n + 1);
        memset(slots[i], i & 0xff, n + 1);
    }
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : sum)
    for (int i = 0; i < N; i++) {
        int j = N - 1 - i;
        sum += ((unsigned char *)slots[j])[0];
        free(slots[j]);
    }
    printf("openmp sum %ld\n", sum);

    /* libc-internal allocations */
    char *buf = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&buf, &len);
    for (int i = 0; i < 20000; i++) fprintf(ms, "line %05d %s\n", (i * 7919) % 20000, i % 3 ? "abc" : "xyz");
    fclose(ms);
    FILE *in = fmemopen(buf, len, "r");
    char *line = NULL;
    size_t cap = 0;
    char **lines = NULL;
    size_t nl = 0;
    while (getline(&line, &cap, in) > 0) {
        lines = realloc(lines, (nl + 1) * sizeof *lines);
        lines[nl++] = strdup(line);
    }
    fclose(in);
    free(line);
    free(buf);
    qsort(lines, nl, sizeof *lines, cmp_str);
    printf("lines %zu first %s", nl, lines[0]);
    regex_t re;
    CHECK(regcomp(&re, "^line 0*([1-9][0-9]*) (xyz)$", REG_EXTENDED | REG_NEWLINE) == 0);
    int matches = 0;
    for (size_t i = 0; i < nl; i++) {
        lines[i][strcspn(lines[i], "\n")] = 0;
        if (regexec(&re, lines[i], 0, NULL, 0) == 0) matches++;
        free(lines[i]);
    }
    regfree(&re);
    free(lines);
    printf("regex matches %d\n", matches);

    char *big = malloc(300001);
    memset(big, 'q', 300000);
    big[300000] = 0;
    char *fmt;
    CHECK(asprintf(&fmt, "%s|%50000d|%s", big, 42, big) == 650002);
    free(fmt);
    free(big);

    int entries = 0;
    DIR *d = opendir("/proc/self");
    if (d) {
        while (readdir(d)) entries++;
        closedir(d);
    }
    CHECK(entries > 10);

    void *lib = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    if (lib) {
        double (*cosine)(double) = (double (*)(double))dlsym(lib, "cos");
        CHECK(cosine != NULL);
        if (cosine) printf("cos(0) = %.1f\n", cosine(0.0));
        dlclose(lib);
    }

    /* report which allocator answered */
    int (*owns)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "bobox_owns");
    void *probe = malloc(64);
    fprintf(stderr, "bobox: %s\n", owns && owns(probe) == 1 ? "active" : "absent");
    free(probe);

    printf("main errors %d\n", errors);
    fflush(stdout);
    return errors ? 1 : 0;
}
