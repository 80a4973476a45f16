// One small-object allocator (bin) against a model of live objects: chain bound, list
// transitions, refill order, and blocks going back once entirely free.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>
#include "internals.h"

namespace {
// A local free as the heap makes it: lengthen the top chain, or start a new one.
void bin_free(bx_bin_t *b, bx_block_t *blk, void *p) {
    if (!bx_bin_free_top(b, blk, p)) bx_bin_new_chain(b, blk);
}

// The thesis's bound on chains (DESIGN §3), stated independently of bin.c's test of it:
// 2 x allocated / objects per block, within [16, 64 KB / size].
uint32_t bin_bound(const bx_bin_t *b) {
    size_t bound = 2 * bx_bin_allocated(b) / b->per_block;
    return uint32_t(std::clamp<size_t>(bound, BX_MIN_CHAINS, b->max_chains));
}

struct BinFixture {
    unsigned index;
    uint32_t size;
    std::vector<bx_chain_t> ring;
    bx_bin_t bin;
    bx_blockcache_t cache;
    explicit BinFixture(unsigned bin_index) : index(bin_index) {
        size = bx_small_size[index];
        ring.resize(bx_bin_ring_size(size));
        bx_bin_init(&bin, index, size, ring.data(), (uint32_t)ring.size(), &cache);
        bx_blockcache_init(&cache, fake_heap(), BX_TAG_SMALL, BX_BLOCK_SIZE, BX_SMALL_BLOCK_CACHE_SUPERBLOCKS, UINT32_MAX, 0, NULL, 1);
    }
    // The chain stack alone: fresh slots a malloc carved into the front cache go back to
    // their block at once (the front cache has its own tests, test_upper_layers.cpp).
    void *alloc() {
        void *p = bx_bin_alloc(&bin);
        if (!p) p = bx_bin_refill_alloc(&bin, fake_heap());
        bx_bin_empty_front(&bin);
        return p;
    }
    void free_local(void *p) { bin_free(&bin, bx_block_of(p), p); }
    void free_direct(void *p) { bx_bin_free_direct(&bin, bx_block_of(p), p); }
    ~BinFixture() {
        bx_bin_flush(&bin);
        bx_blockcache_flush(&cache, true);
        bx_blockalloc_destroy(&cache.alloc);
    }
};
} // namespace

TEST_CASE("bin: random operations keep objects distinct and structures consistent", "[bin]") {
    for (unsigned index : {0u, 5u, 30u, 60u}) {
        BinFixture f(index);
        if (index >= BX_SMALL_BINS) continue;
        std::vector<char *> live;
        std::set<char *> live_set;
        std::mt19937 rng(index + 1);
        size_t in_use_superblocks_before = bx_node_superblocks_in_use();
        for (int step = 0; step < 40000; step++) {
            bool grow = live.size() < 50 || rng() % 100 < (step < 20000 ? 60 : 35);
            if (grow) {
                char *p = static_cast<char *>(f.alloc());
                REQUIRE(p != nullptr);
                REQUIRE((uintptr_t)p % 16 == 0);
                bx_block_t *blk = bx_block_of(p);
                REQUIRE(blk->size == f.size);
                REQUIRE(bx_block_object(blk, p) == p);
                REQUIRE(live_set.insert(p).second); // never handed out twice
                memset(p, (int)(uintptr_t)p, f.size);
                live.push_back(p);
            } else {
                size_t i = rng() % live.size();
                char *p = live[i];
                REQUIRE((unsigned char)p[f.size - 1] == (unsigned char)(uintptr_t)p); // contents survived
                live[i] = live.back();
                live.pop_back();
                live_set.erase(p);
                if (rng() % 4 == 0)
                    f.free_direct(p);
                else
                    f.free_local(p);
                // What other threads' checks read stays in range.
                bx_block_t *blk = bx_block_of(p);
                if (blk->heap != BX_BLOCK_NO_OWNER) REQUIRE(bx_block_check_header(blk));
            }
            REQUIRE(bx_bin_allocated(&f.bin) == live.size());
            if (step % 97 == 0) REQUIRE(bx_bin_check(&f.bin));
            REQUIRE(f.bin.chains.len <= bin_bound(&f.bin) + 1);
        }
        for (char *p : live) f.free_local(p);
        REQUIRE(bx_bin_check(&f.bin));
        bx_bin_flush(&f.bin);
        // Every block was entirely free, so every one went back to the block cache.
        for (unsigned l = BX_LIST_FULL; l < BX_LIST_COUNT; l++) REQUIRE(f.bin.lists[bx_bin_list_slot(l)] == nullptr);
        bx_blockcache_flush(&f.cache, true);
        REQUIRE(f.cache.alloc.superblocks == 0);
        // Not equal: the reclaimer may hand back another heap's superblock meanwhile.
        REQUIRE(bx_node_superblocks_in_use() <= in_use_superblocks_before);
    }
}

TEST_CASE("bin: the oldest chain is dropped past the bound, and its block lands on a list", "[bin]") {
    BinFixture f(3); // 64-byte objects: 1024 per block
    std::vector<char *> objs;
    for (int i = 0; i < 40 * 1024; i++) objs.push_back(static_cast<char *>(f.alloc()));
    // 40 full blocks allocated: the bound is 2 * 40 = 80 chains, within [16, 1024].
    REQUIRE(bin_bound(&f.bin) == 80);
    // One free in each block, then three more rounds in blocks 20-39: a new chain for
    // every free, so the chains of blocks 0-19 are the oldest.
    std::vector<bx_block_t *> order;
    for (int round = 0; round < 4; round++)
        for (int b = round ? 20 : 0; b < 40; b++) {
            char *p = objs[b * 1024 + round];
            order.push_back(bx_block_of(p));
            f.free_local(p);
        }
    uint32_t bound = bin_bound(&f.bin);
    REQUIRE(f.bin.chains.len == bound);
    // The records held are the newest `bound` chains, oldest first.
    size_t first_kept = order.size() - bound;
    for (uint32_t i = 0; i < bound; i++)
        REQUIRE(bx_chainstack_record(&f.bin.chains, i)->block == order[first_kept + i]);
    // Blocks 0-19 left the queue with 1 free object of 1024: almost full.
    REQUIRE(bx_bin_check(&f.bin));
    for (int b = 0; b < 20; b++) REQUIRE(bx_block_of(objs[b * 1024])->list == BX_LIST_ALMOST_FULL);
    // Blocks 20-39 are still named by chains; they stay on the list they were on (full)
    // until their chains go.
    for (int b = 20; b < 40; b++) {
        REQUIRE(bx_block_of(objs[b * 1024])->chain_refs > 0);
        REQUIRE(bx_block_of(objs[b * 1024])->list == BX_LIST_FULL);
    }
    REQUIRE(f.bin.list_len[bx_bin_list_slot(BX_LIST_ALMOST_FULL)] == 20);
    for (int b = 0; b < 40; b++)
        for (int i = b < 20 ? 1 : 4; i < 1024; i++) f.free_local(objs[b * 1024 + i]);
    REQUIRE(bx_bin_check(&f.bin));
    REQUIRE(bx_bin_allocated(&f.bin) == 0);
}

TEST_CASE("bin: refill prefers almost-full, then almost-empty, then a new block", "[bin]") {
    BinFixture f(20);
    uint32_t per = f.bin.per_block;
    std::vector<char *> objs;
    for (uint32_t i = 0; i < 3 * per; i++) objs.push_back(static_cast<char *>(f.alloc()));
    bx_block_t *a = bx_block_of(objs[0]), *b = bx_block_of(objs[per]), *c = bx_block_of(objs[2 * per]);
    REQUIRE((a != b && b != c && a != c));
    // Direct frees bypass the chain stack: b becomes almost full, c almost empty.
    f.free_direct(objs[per]);
    for (uint32_t i = 0; i < per - 1; i++) f.free_direct(objs[2 * per + i]);
    REQUIRE(b->list == BX_LIST_ALMOST_FULL);
    // c's chain ran out last: its record stays on top, spent, and c on no list yet.
    REQUIRE(f.bin.chains.len == 1);
    REQUIRE(f.bin.chains.top.block == c);
    REQUIRE(f.bin.chains.top.count == 0);
    REQUIRE(c->list == BX_LIST_QUEUE);
    REQUIRE(a->list == BX_LIST_FULL);
    REQUIRE(bx_bin_check(&f.bin));
    char *p = static_cast<char *>(f.alloc());
    REQUIRE(c->list == BX_LIST_ALMOST_EMPTY); // the refill put it on its list first
    REQUIRE(bx_block_of(p) == b);
    REQUIRE((f.bin.chains.top.block == b && f.bin.chains.top.count == 0)); // its one chain used up
    p = static_cast<char *>(f.alloc());
    REQUIRE(b->list == BX_LIST_FULL);
    REQUIRE(bx_block_of(p) == c);
    REQUIRE(c->list == BX_LIST_QUEUE);
    REQUIRE(bx_bin_check(&f.bin));
}

TEST_CASE("bin: a block's spent chain leaving the stack publishes its slot limit for other threads' frees", "[bin]") {
    BinFixture f(12);
    uint32_t per = f.bin.per_block;
    std::vector<char *> objs;
    for (uint32_t i = 0; i + 1 < per; i++) objs.push_back(static_cast<char *>(f.alloc()));
    bx_block_t *blk = bx_block_of(objs[0]);
    // Carving writes the owner's line only: others still test its slot_limit.
    REQUIRE(blk->shared_slot_limit == 0);
    REQUIRE(bx_block_is_slot(blk, objs.back()));
    objs.push_back(static_cast<char *>(f.alloc())); // the chain runs out, its record stays
    REQUIRE(bx_block_of(objs.back()) == blk);
    REQUIRE(blk->shared_slot_limit == 0);
    objs.push_back(static_cast<char *>(f.alloc())); // the next allocation drops it
    REQUIRE(bx_block_of(objs.back()) != blk);
    REQUIRE(blk->shared_slot_limit == blk->slot_limit);
    REQUIRE(blk->slot_limit == per * bx_block_slot_step(blk));
    for (char *p : objs) f.free_local(p);
    REQUIRE(bx_bin_check(&f.bin));
}

TEST_CASE("bin: an emptied block goes back to the shared block cache and another size class reuses it", "[bin]") {
    // Two bins sharing one block cache, as a thread's bins do.
    uint32_t s16 = bx_small_size[0], s64 = bx_small_size[3];
    std::vector<bx_chain_t> ring16(bx_bin_ring_size(s16)), ring64(bx_bin_ring_size(s64));
    bx_bin_t b16, b64;
    bx_blockcache_t cache;
    bx_blockcache_init(&cache, fake_heap(), BX_TAG_SMALL, BX_BLOCK_SIZE, BX_SMALL_BLOCK_CACHE_SUPERBLOCKS, UINT32_MAX, 0, NULL, 1);
    bx_bin_init(&b16, 0, s16, ring16.data(), (uint32_t)ring16.size(), &cache);
    bx_bin_init(&b64, 3, s64, ring64.data(), (uint32_t)ring64.size(), &cache);
    auto alloc = [&](bx_bin_t *b) {
        void *p = bx_bin_alloc(b);
        return static_cast<char *>(p ? p : bx_bin_refill_alloc(b, fake_heap()));
    };
    // Five blocks of 64-byte objects, freed in allocation order (each block empties in turn).
    uint32_t per = b64.per_block;
    std::vector<char *> objs;
    for (uint32_t i = 0; i < 5 * per; i++) objs.push_back(alloc(&b64));
    std::set<bx_block_t *> blocks64;
    for (char *p : objs) blocks64.insert(bx_block_of(p));
    REQUIRE(blocks64.size() == 5);
    for (char *p : objs) bin_free(&b64, bx_block_of(p), p);
    REQUIRE(bx_bin_check(&b64));
    // Only the last block, still the top chain, stays with the bin; the other four are cached.
    REQUIRE(b64.chains.len == 1);
    REQUIRE(b64.chains.top.block == bx_block_of(objs.back()));
    REQUIRE(cache.count == 4);
    // The 16-byte bin takes its blocks from the cache: blocks the 64-byte bin emptied.
    std::set<bx_block_t *> blocks16;
    for (uint32_t i = 0; i < 4 * b16.per_block; i++) blocks16.insert(bx_block_of(alloc(&b16)));
    REQUIRE(blocks16.size() == 4);
    for (bx_block_t *blk : blocks16) {
        REQUIRE(blocks64.count(blk) == 1);
        REQUIRE(blk->size == s16);
    }
    REQUIRE(cache.count == 0);
    REQUIRE(bx_bin_check(&b16));
    // Clean up: the 16-byte blocks are full; give everything back.
    for (bx_block_t *blk : blocks16) {
        for (uint32_t i = 0; i < b16.per_block; i++) bx_bin_free_direct(&b16, blk, bx_block_first(blk) + i * s16);
    }
    bx_bin_flush(&b16);
    bx_bin_flush(&b64);
    bx_blockcache_flush(&cache, true);
    REQUIRE(cache.alloc.superblocks == 0);
    bx_blockalloc_destroy(&cache.alloc);
}

TEST_CASE("bin: a heap's new owner's bins take back the blocks they emptied; its own frees are reused newest first", "[bin]") {
    // A heap's cache keeps a list per bin. After a change of owner (a thread that ended, the
    // next that took its heap), a size reuses the pages it touched, not another size's
    // (whose deeper ones it would leave resident beside its own); within one owner's life
    // the block emptied last comes first (its lines are still in the CPU's cache).
    unsigned idx[3] = {0, 3, 15}; // 16, 64 and 256 bytes
    std::vector<std::vector<bx_chain_t>> rings;
    bx_bin_t bins[3];
    void *lists[BX_SMALL_BINS];
    bx_blockcache_t cache;
    bx_blockcache_init(&cache, fake_heap(), BX_TAG_SMALL, BX_BLOCK_SIZE, BX_SMALL_BLOCK_CACHE_SUPERBLOCKS, UINT32_MAX, 0,
                       lists, BX_SMALL_BINS);
    for (int i = 0; i < 3; i++) {
        uint32_t size = bx_small_size[idx[i]];
        rings.emplace_back(bx_bin_ring_size(size));
        bx_bin_init(&bins[i], idx[i], size, rings.back().data(), (uint32_t)rings.back().size(), &cache);
    }
    auto alloc = [&](bx_bin_t *b) {
        void *p = bx_bin_alloc(b);
        return static_cast<char *>(p ? p : bx_bin_refill_alloc(b, fake_heap()));
    };
    // The 64- and 256-byte bins fill two blocks each, in turns, and free them (256 last).
    std::set<bx_block_t *> own[3];
    std::vector<char *> objs[3];
    for (uint32_t round = 0; round < 2; round++)
        for (int i = 1; i < 3; i++)
            for (uint32_t k = 0; k < bins[i].per_block; k++) {
                objs[i].push_back(alloc(&bins[i]));
                own[i].insert(bx_block_of(objs[i].back()));
            }
    for (int i = 1; i < 3; i++) {
        REQUIRE(own[i].size() == 2);
        for (char *p : objs[i]) bin_free(&bins[i], bx_block_of(p), p);
        bx_bin_flush(&bins[i]);
    }
    REQUIRE(cache.count == 4);
    char *live[3];
    // The same owner: the 64-byte bin takes the block the 256-byte bin emptied last; freed,
    // it is on the 64-byte bin's list, given last.
    char *moved = alloc(&bins[1]);
    bx_block_t *moved_block = bx_block_of(moved);
    REQUIRE(own[2].count(moved_block) == 1);
    REQUIRE(moved_block->size == bins[1].size);
    bin_free(&bins[1], moved_block, moved);
    bx_bin_flush(&bins[1]);
    own[2].erase(moved_block);
    own[1].insert(moved_block);
    REQUIRE(cache.count == 4);
    // A new owner: the 256-byte bin takes back a block it emptied, though the 64-byte
    // bin's was cached last; so does the 64-byte bin.
    bx_blockcache_new_owner(&cache);
    for (int i : {2, 1}) {
        live[i] = alloc(&bins[i]);
        REQUIRE(own[i].count(bx_block_of(live[i])) == 1);
        REQUIRE(bx_block_of(live[i])->size == bins[i].size);
    }
    // The 16-byte bin emptied none: the list given to last, the 64-byte bin's.
    live[0] = alloc(&bins[0]);
    REQUIRE(own[1].count(bx_block_of(live[0])) == 1);
    REQUIRE(bx_block_of(live[0])->size == bins[0].size);
    REQUIRE(cache.count == 1);
    bx_blockcache_check_head(&cache, "test");
    for (int i = 0; i < 3; i++) {
        bin_free(&bins[i], bx_block_of(live[i]), live[i]);
        bx_bin_flush(&bins[i]);
        REQUIRE(bx_bin_check(&bins[i]));
    }
    REQUIRE(cache.count == 4);
    bx_blockcache_flush(&cache, true);
    REQUIRE(cache.alloc.superblocks == 0);
    bx_blockalloc_destroy(&cache.alloc);
}

TEST_CASE("bin: frees hopping between blocks leave at most the top's block pinned once all are free", "[bin]") {
    // A batch freed in malloc order whose objects alternate between blocks (as a bin's
    // blocks hand them out after earlier batches): every block is named by several
    // records, and each must go back to the cache once entirely free, not only the top's.
    BinFixture f(15);
    uint32_t per = f.bin.per_block, blocks = 6;
    std::vector<char *> objs;
    for (uint32_t i = 0; i < blocks * per; i++) objs.push_back(static_cast<char *>(f.alloc()));
    std::vector<char *> order;
    for (uint32_t pair = 0; pair < blocks; pair += 2)
        for (uint32_t i = 0; i < per; i++) {
            order.push_back(objs[pair * per + i]);
            order.push_back(objs[(pair + 1) * per + i]);
        }
    uint32_t cached = f.cache.count;
    for (char *p : order) f.free_local(p);
    REQUIRE(bx_bin_check(&f.bin));
    // All records left name one block: the last one freed into.
    bx_block_t *last = bx_block_of(order.back());
    for (uint32_t i = 0; i < f.bin.chains.len; i++) REQUIRE(bx_chainstack_record(&f.bin.chains, i)->block == last);
    REQUIRE(last->chain_refs == f.bin.chains.len);
    REQUIRE(f.cache.count == cached + blocks - 1);
}

TEST_CASE("bin: an entirely free top block can be taken back for another bin", "[bin]") {
    BinFixture f(4);
    std::vector<char *> objs;
    for (int i = 0; i < 10; i++) objs.push_back(static_cast<char *>(f.alloc()));
    bx_block_t *blk = bx_block_of(objs[0]);
    REQUIRE(!bx_bin_release_empty_top(&f.bin)); // objects still live in it
    for (char *p : objs) f.free_local(p);
    // Frees never left the block, so it is still the top chain, entirely free.
    REQUIRE(f.bin.chains.len == 1);
    REQUIRE(f.bin.chains.top.block == blk);
    REQUIRE(blk->used == 0);
    uint32_t cached = f.cache.count;
    REQUIRE(bx_bin_release_empty_top(&f.bin));
    REQUIRE(bx_chainstack_empty(&f.bin.chains));
    REQUIRE(f.cache.count == cached + 1);
    REQUIRE(f.cache.heads[0] == blk->mem);
    REQUIRE(!bx_bin_release_empty_top(&f.bin)); // nothing left to give
    REQUIRE(bx_bin_check(&f.bin));
    // The bin still works: its next allocation refills from the cache.
    char *p = static_cast<char *>(f.alloc());
    REQUIRE(bx_block_of(p) == blk);
    f.free_local(p);
}

TEST_CASE("bin: the lists' half of a refill skips blocks that chains name, and says so", "[bin]") {
    // The heap asks for the lists' half first and reclaims other bins' empty tops only when
    // it finds nothing there: the heads of the lists cannot tell, since blocks that chains
    // name stay listed until their chains go.
    BinFixture f(3); // 64-byte objects
    uint32_t per = f.bin.per_block;
    std::vector<char *> objs;
    for (uint32_t i = 0; i < 3 * per; i++) objs.push_back(static_cast<char *>(f.alloc()));
    bx_block_t *a = bx_block_of(objs[0]), *b = bx_block_of(objs[per]);
    // a almost full and b almost empty by frees that bypass the stack, then one local free
    // into each: a chain names each, and each stays on its list.
    f.free_direct(objs[0]);
    for (uint32_t i = 0; i < per - 2; i++) f.free_direct(objs[per + i]);
    REQUIRE(a->list == BX_LIST_ALMOST_FULL);
    REQUIRE(b->list == BX_LIST_ALMOST_EMPTY);
    f.free_local(objs[1]);
    f.free_local(objs[per + per - 2]);
    REQUIRE((a->chain_refs == 1 && b->chain_refs == 1));
    REQUIRE(f.bin.lists[bx_bin_list_slot(BX_LIST_ALMOST_FULL)] == a);
    REQUIRE(f.bin.lists[bx_bin_list_slot(BX_LIST_ALMOST_EMPTY)] == b);
    REQUIRE(bx_bin_refill_listed(&f.bin) == nullptr);
    // Both left the lists, to be settled when their chains go.
    REQUIRE((a->list == BX_LIST_QUEUE && b->list == BX_LIST_QUEUE));
    REQUIRE(f.bin.list_len[bx_bin_list_slot(BX_LIST_ALMOST_FULL)] == 0);
    REQUIRE(f.bin.list_len[bx_bin_list_slot(BX_LIST_ALMOST_EMPTY)] == 0);
    REQUIRE(bx_bin_check(&f.bin));
    // Once their chains are used up, both are listed again and the lists' half takes one.
    std::vector<char *> again;
    for (int i = 0; i < 2; i++) again.push_back(static_cast<char *>(bx_bin_alloc(&f.bin)));
    REQUIRE(bx_bin_alloc(&f.bin) == nullptr); // spent: the next malloc drops it
    char *p = static_cast<char *>(bx_bin_refill_listed(&f.bin));
    REQUIRE(p != nullptr);
    REQUIRE(bx_block_of(p) == a); // almost full first
    REQUIRE(b->list == BX_LIST_ALMOST_EMPTY);
    REQUIRE(bx_bin_check(&f.bin));
    again.push_back(p);
    for (char *q : again) f.free_local(q);
    for (uint32_t i = 2; i < per; i++) f.free_local(objs[i]);    // the rest of a
    for (uint32_t i = 2 * per - 1; i < 3 * per; i++) f.free_local(objs[i]); // b's last, and c
    REQUIRE(bx_bin_allocated(&f.bin) == 0);
    REQUIRE(bx_bin_check(&f.bin));
}
