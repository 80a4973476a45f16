/* registry.h - checked mode's set of live objects: every object bx_checked_alloc handed out
 * and no free has taken back yet (tools/checked.h). With it the checks at exit and in
 * bobox_check_heap reach the objects a program never frees, and a free tells a live object
 * from one parked in the quarantine without reading the object (a parked large object has
 * no access).
 *
 * A hash set of addresses (open addressing, linear probing, deletion by backward shift) in
 * 64 shards, each with its own lock and table; a table is memory of its own from bx_os_map,
 * never malloc's, and no object's overflow can reach it. A table doubles when half full and
 * halves when an eighth full, so an add or remove costs a lock, a hash and a short probe,
 * and now and then the rehash of one shard (a 64th of the live objects). Entries keep 4 bits
 * of the caller's beside the address (objects are 16-byte aligned). */
#ifndef BX_REGISTRY_H
#define BX_REGISTRY_H

#include "base/common.h"

#define BX_REGISTRY_META_MASK 15u

/* Adds p (16-byte aligned, not present) with `meta` (at most BX_REGISTRY_META_MASK); false
 * if no memory could be had for its table. */
bool bx_registry_add(const void *p, unsigned meta);
/* Removes p: its meta, or -1 if p is not present. */
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
