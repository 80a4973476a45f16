/* registry.h - checked mode's set of live objects: every object bx_checked_alloc handed out
 * and no free has taken back yet (tools/checked.h). With it the checks at exit and in
 * bobox_check_heap reach the objects a program never frees, and a free tells a live object
 * from one parked in the quarantine without reading the object (a parked large object has
 * no access).
 *
 * A bitmap per 64 KB chunk of address space holding live objects (a bit per 16 bytes:
 * objects are 16-byte aligned), found through a hash table of chunks (open addressing,
 * linear probing, deletion by backward shift) in 64 shards, each under its own lock; tables
 * and bitmaps are memory of its own from bx_os_map, never malloc's, and no object's overflow
 * can reach them. An add or remove costs a lock, a hash of the chunk, a short probe in a
 * table of a few records per MB of heap, and a bit in a bitmap that consecutive objects
 * share (a hash of each address instead sent every operation to a cache line of its own in
 * a table as large as the heap's count of objects: three times the time of a checked malloc).
 * A chunk's record and bitmap go back to the shard when its last object leaves. Each entry
 * keeps 4 bits of the caller's (its meta), in bit planes made only for chunks that use them. */
#ifndef BX_REGISTRY_H
#define BX_REGISTRY_H

#include "base/common.h"

#define BX_REGISTRY_META_MASK 15u

/* Adds p (16-byte aligned, not present) with `meta` (at most BX_REGISTRY_META_MASK); false
 * if no memory could be had for its table. */
bool bx_registry_add(const void *p, unsigned meta);
/* Removes p: its meta, or -1 if p is not present (an address not 16-byte aligned never is). */
int bx_registry_remove(const void *p);
/* p's meta, or -1 if p is not present. */
int bx_registry_find(const void *p);
/* Calls fn(p, meta, arg) for every entry, one shard at a time under its lock: nothing is
 * added to or removed from that shard meanwhile (fn must not add or remove either). */
void bx_registry_each(void (*fn)(void *p, unsigned meta, void *arg), void *arg);
/* Entries now (a snapshot). */
size_t bx_registry_count(void);
/* pthread_atfork's three handlers: the forking thread holds every shard's lock across fork. */
void bx_registry_fork_prepare(void);
void bx_registry_fork_release(void);

#endif
