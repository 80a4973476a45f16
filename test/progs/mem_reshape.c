// mem_reshape - a live set that changes the sizes it is made of (issue 47): freed small
// objects' pages must serve other sizes without waiting for whole 64 KB blocks to empty.
//   mem_reshape grow MB    fill MB with 16-512 B objects, free a random 90%, fill back up to
//                          MB with 1-4 KB objects: peak RSS at most MAX_PEAK_PCT % of MB
//                          above the start (2.09x with whole blocks only, 1.83x with pages,
//                          1.38x once the idle sizes' blocks mix and the 1-4 KB objects fill
//                          their gaps); with MAX_REFAULT_KB set, the refill faults in at
//                          most that many KB beyond what RSS grew by (pages given back and
//                          then written again: 17 MB of 64 when sizes gave back the pages of
//                          blocks that mixed next)
//   mem_reshape idle MB    the same fill and frees, then the thread only mallocs another size
//                          now and then for 4 decay delays: RSS falls by at least a fifth
//                          of MB; then the small sizes are allocated again, up to the first
//                          count (the given-back slots come back)
// Every object is tagged and checked before it is freed, and at the end: a slot handed out
// twice, or a live object's page given back, fails. Exit 0 when all holds.
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>
#include "mem_common.h"

struct obj {
    unsigned char *p;
    size_t n;
    unsigned char tag;
};

static uint64_t rng = 47;
static uint64_t next_random(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static void put(struct obj *o, size_t n, unsigned char tag) {
    o->p = malloc(n);
    CHECK(o->p != NULL, "malloc(%zu)", n);
    o->n = n;
    o->tag = tag;
    memset(o->p, tag, n);
}

static void check(const struct obj *o) {
    for (size_t i = 0; i < o->n; i++) CHECK(o->p[i] == o->tag, "object %p byte %zu changed", (void *)o->p, i);
}

static long minor_faults(void) {
    struct rusage ru;
    CHECK(getrusage(RUSAGE_SELF, &ru) == 0, "getrusage");
    return ru.ru_minflt;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    CHECK(argc == 3, "usage: mem_reshape grow|idle MB");
    int idle = !strcmp(argv[1], "idle");
    size_t target = (size_t)atol(argv[2]) << 20;
    long start_kb = rss_kb();
    size_t cap = target / 16, count = 0, live = 0;
    struct obj *o = calloc(cap, sizeof *o);
    CHECK(o != NULL, "object table");
    while (live < target) {
        put(&o[count], 16 + next_random() % 497, (unsigned char)count);
        live += o[count++].n;
    }
    size_t filled = count, kept = 0;
    for (size_t i = 0; i < count; i++) {
        check(&o[i]);
        if (next_random() % 10) {
            free(o[i].p);
            live -= o[i].n;
        } else {
            o[kept++] = o[i];
        }
    }
    if (!idle) {
        long refill_start_kb = rss_kb(), faults_before = minor_faults();
        while (live < target) {
            CHECK(kept < cap, "object table full");
            put(&o[kept], 1024 + next_random() % 3073, (unsigned char)(kept * 3));
            live += o[kept++].n;
        }
        long page_kb = sysconf(_SC_PAGESIZE) / 1024;
        long refault_kb = (minor_faults() - faults_before) * page_kb - (peak_rss_kb() - refill_start_kb);
        long grown_kb = peak_rss_kb() - start_kb, limit_kb = env_long("MAX_PEAK_PCT", 150) * (long)(target >> 10) / 100;
        printf("mem_reshape grow: peak %ld KB above the start for %zu KB live (%.2fx; limit %ld KB); "
               "the refill faulted %ld KB beyond its growth\n",
               grown_kb, live >> 10, (double)grown_kb / (double)(live >> 10), limit_kb, refault_kb);
        CHECK(grown_kb <= limit_kb, "peak %ld KB > %ld KB", grown_kb, limit_kb);
        long max_refault_kb = env_long("MAX_REFAULT_KB", -1);
        CHECK(max_refault_kb < 0 || refault_kb <= max_refault_kb, "the refill faulted %ld KB beyond its growth > %ld KB",
              refault_kb, max_refault_kb);
    } else {
        long before_kb = rss_kb();
        long decay_ms = env_long("BOBOX_DECAY_MS", 1000);
        for (long waited = 0; waited < 4 * decay_ms; waited += 50) {
            one_further_malloc();
            sleep_ms(50);
        }
        long after_kb = rss_kb(), want_kb = (long)(target >> 10) / 5;
        printf("mem_reshape idle: RSS %ld KB after the frees, %ld KB after 4 decay delays (at least %ld KB back)\n",
               before_kb, after_kb, want_kb);
        CHECK(before_kb - after_kb >= want_kb, "%ld KB given back, want %ld KB", before_kb - after_kb, want_kb);
        // The small sizes again: the slots of the pages given back are handed out anew.
        while (kept < filled) {
            put(&o[kept], 16 + next_random() % 497, (unsigned char)(kept * 7));
            kept++;
        }
    }
    for (size_t i = 0; i < kept; i++) check(&o[i]);
    for (size_t i = 0; i < kept; i++) free(o[i].p);
    free(o);
    printf("mem_reshape %s: ok\n", argv[1]);
    return 0;
}
