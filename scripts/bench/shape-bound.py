#!/usr/bin/env python3
"""What any reuse of freed memory by pages can reach on `memshapes shape` (issue 47), computed
from the workload's own sequence, bobox's size classes and its 64 KB blocks: no allocator runs.

The shape fills 200 MB (scale 1) with 16-512 B objects, frees a random 90% and refills to
200 MB with 1-4 KB objects. Its peak is what the small objects' pages keep resident, plus
the refill, plus the benchmark's own table of 24-byte records. Two bounds:
  pages   a page with no live byte goes back (or to another size); every other page stays.
  mesh U  pages of one size class whose live bytes do not overlap share one physical page
          (Mesh, PLDI 2019), in units of U bytes; greedy first-fit over every unit of the class,
          which meshes at least as well as Mesh's randomised pairing. Each unit meshed onto
          another is a mapping of its own: the VMAs column, against vm.max_map_count (65530).
Usage: scripts/bench/shape-bound.py [scale]   (scale 1: about 5 s)"""
import os
import random
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BLOCK, PAGE, GRAN = 65536, 4096, 16
MB = float(1 << 20)


def small_classes():
    text = open(os.path.join(ROOT, "allocator/small/sizeclass_tables.h")).read()
    body = re.search(r"bx_small_size\[BX_SMALL_BINS\] = \{([^}]*)\}", text).group(1)
    return [int(x) for x in re.findall(r"\d+", body)]


def class_of(classes, n):
    return next(c for c in classes if c >= n)


def capacity(size):  # bx_block_capacity: no slot starts at the last 16 bytes' offset
    n = BLOCK // size
    return n - 1 if (n - 1) * size == 0xFFF0 else n


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    target = int(200 * (1 << 20) * scale)
    classes = small_classes()
    rng = random.Random(47)
    # The fill and the random 90% freed (the workload's own proportions, not its generator).
    objects, live = [], 0
    while live < target:
        n = 16 + rng.randrange(512 - 16 + 1)
        objects.append(n)
        live += n
    per_class = {}
    kept_live = 0
    for n in objects:
        alive = rng.randrange(10) == 0
        per_class.setdefault(class_of(classes, n), []).append(alive)
        if alive:
            kept_live += n
    # The refill: 1-4 KB objects in their classes, blocks filled in turn.
    refill_slots, need = {}, target - kept_live
    while need > 0:
        n = 1024 + rng.randrange(4096 - 1024 + 1)
        c = class_of(classes, n)
        refill_slots[c] = refill_slots.get(c, 0) + 1
        need -= n
    refill = sum(((k + capacity(c) - 1) // capacity(c)) * BLOCK for c, k in refill_slots.items())
    table = (len(objects) + 16) * 24  # the benchmark's records, as many as objects made

    def bound(unit):
        """Bytes the small objects' units keep, and the units mapped onto another."""
        kept = meshed = 0
        for c, flags in per_class.items():
            cap = capacity(c)
            units = {}
            for i, alive in enumerate(flags):
                if not alive:
                    continue
                start = (i // cap) * BLOCK + (i % cap) * c
                for g in range(start // GRAN, (start + c + GRAN - 1) // GRAN):
                    u = g * GRAN // unit
                    units[u] = units.get(u, 0) | (1 << (g % (unit // GRAN)))
            phys = []
            for m in units.values():
                for k, u in enumerate(phys):
                    if not u & m:
                        phys[k] = u | m
                        break
                else:
                    phys.append(m)
            kept += len(phys) * unit
            meshed += len(units) - len(phys)
        return kept, meshed

    small_all = sum((len(f) + capacity(c) - 1) // capacity(c) * BLOCK for c, f in per_class.items())
    pages_kept = 0
    for c, flags in per_class.items():
        cap = capacity(c)
        pages = set()
        for i, alive in enumerate(flags):
            if alive:
                start = (i // cap) * BLOCK + (i % cap) * c
                pages.update(range(start // PAGE, (start + c - 1) // PAGE + 1))
        pages_kept += len(pages) * PAGE
    final_live = target  # the refill stops once the live bytes reach the target again
    print(f"scale {scale}: small objects {len(objects)} in {small_all / MB:.0f} MB of blocks, "
          f"{kept_live / MB:.1f} MB left live; refill {refill / MB:.0f} MB of blocks; table {table / MB:.0f} MB")
    print(f"{'bound':<12} {'small kept MB':>14} {'peak / live':>12} {'VMAs':>8}")
    rows = [("pages", pages_kept, 0)]
    for unit in (PAGE, 4 * PAGE, BLOCK):
        kept, meshed = bound(unit)
        rows.append((f"mesh {unit // 1024} KB", kept, meshed))
    for name, kept, vmas in rows:
        peak = kept + refill + table
        print(f"{name:<12} {kept / MB:>14.0f} {peak / final_live:>12.2f} {vmas:>8}")


if __name__ == "__main__":
    main()
