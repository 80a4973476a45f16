/* samplepool.c - the samples' mappings by 64 KB step (samplepool.h). */
#include "mem/samplepool.h"

#include "base/lock.h"
#include "os/options.h"
#include "os/os.h"

static bx_lock_t pool_lock = BX_LOCK_INIT;
static bx_large_t *pool[BX_SAMPLE_STEPS]; /* linked through bnext; peeked at without the lock */
static size_t pool_bytes;
static uint64_t pool_used_ms; /* the last put: the pool decays whole after that */

static size_t steps_of(const bx_large_t *l) { return (l->map_size - bx_os_page_size()) / BX_BLOCK_SIZE; }

bx_large_t *bx_samplepool_take(size_t steps, int node) {
    bx_large_t **list = &pool[steps - 1];
    if (!__atomic_load_n(list, __ATOMIC_RELAXED)) return NULL;
    bx_large_t *l = NULL;
    bx_lock(&pool_lock);
    int looked = 0;
    for (bx_large_t **at = list; *at && looked < 4; at = &(*at)->bnext, looked++)
        if ((*at)->node == node) {
            l = *at;
            __atomic_store_n(at, l->bnext, __ATOMIC_RELAXED);
            __atomic_store_n(&pool_bytes, pool_bytes - l->map_size, __ATOMIC_RELAXED);
            break;
        }
    bx_unlock(&pool_lock);
    return l;
}

bool bx_samplepool_put(bx_large_t *l, size_t limit) {
    size_t steps = steps_of(l);
    bool kept = false;
    uint64_t now = bx_now_ms(); /* before the lock: an interposed clock may allocate */
    bx_lock(&pool_lock);
    if (pool_bytes + l->map_size <= limit) {
        l->bnext = pool[steps - 1];
        __atomic_store_n(&pool[steps - 1], l, __ATOMIC_RELAXED);
        __atomic_store_n(&pool_bytes, pool_bytes + l->map_size, __ATOMIC_RELAXED);
        pool_used_ms = now;
        kept = true;
    }
    bx_unlock(&pool_lock);
    return kept;
}

bx_large_t *bx_samplepool_collect(bool all) {
    if (!__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED)) return NULL;
    uint64_t now = bx_now_ms();
    bx_large_t *out = NULL;
    bx_lock(&pool_lock);
    if (all || (now > pool_used_ms && now - pool_used_ms >= bx_options.decay_ms)) {
        for (unsigned i = 0; i < BX_SAMPLE_STEPS; i++) {
            for (bx_large_t *l = pool[i], *next; l; l = next) {
                next = l->bnext;
                l->anext = out;
                out = l;
            }
            __atomic_store_n(&pool[i], NULL, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&pool_bytes, 0, __ATOMIC_RELAXED);
    }
    bx_unlock(&pool_lock);
    return out;
}

size_t bx_samplepool_bytes(void) { return __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED); }
void bx_samplepool_lock(void) { bx_lock(&pool_lock); }
void bx_samplepool_unlock(void) { bx_unlock(&pool_lock); }
void bx_samplepool_reset_lock(void) { bx_lock_reset(&pool_lock); }
