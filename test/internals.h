// internals.h - the allocator's internal headers, for unit tests linked with libbobox.a.
#pragma once
extern "C" {
#include "bin.h"
#include "block.h"
#include "blockcache.h"
#include "chainstack.h"
#include "node.h"
#include "retention.h"
#include "sizeclass.h"
#include "superblock.h"
}
#include <cstdint>
#include <random>

// A stand-in owner: the structures below the heap store it but never dereference it.
inline struct bx_heap *fake_heap() { return reinterpret_cast<struct bx_heap *>(uintptr_t{0x10000}); }
