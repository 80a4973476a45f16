// internals.h - the allocator's internal headers, for unit tests linked with libbobox.a.
#pragma once
extern "C" {
#include "small/bin.h"
#include "mem/block.h"
#include "mem/blockcache.h"
#include "small/chainstack.h"
#include "mem/node.h"
#include "os/os.h"
#include "base/bounds.h"
#include "small/sizeclass.h"
#include "mem/superblock.h"
}
#include <cstdint>
#include <new>
#include <random>

// A stand-in owner: the structures below the heap store it but never dereference it.
inline struct bx_heap *fake_heap() { return reinterpret_cast<struct bx_heap *>(uintptr_t{0x10000}); }

// Room for blocks outside any superblock of the allocator's: aligned as superblocks are, the
// first 64 KB for the descriptors (block.h), then `blocks` blocks of 64 KB.
struct BlockRoom {
    char *base;
    size_t bytes;
    explicit BlockRoom(size_t blocks) : bytes((blocks + 1) * BX_BLOCK_SIZE) {
        base = static_cast<char *>(bx_os_map_aligned(bytes, BX_SUPERBLOCK_ALIGN, 0));
        if (!base) throw std::bad_alloc();
    }
    ~BlockRoom() { bx_os_unmap(base, bytes); }
    BlockRoom(const BlockRoom &) = delete;
    BlockRoom &operator=(const BlockRoom &) = delete;
    char *mem(size_t i) const { return base + (i + 1) * BX_BLOCK_SIZE; }
    bx_block_t *block(size_t i) const { return bx_block_of(mem(i)); }
};
