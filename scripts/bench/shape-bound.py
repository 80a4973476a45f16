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
          What only PSS and a cgroup's charge would show: RSS (VmRSS, VmHWM, ru_maxrss, what
          the benchmarks read) counts a page once per mapping of it, so meshing leaves it as is.
  spans   each refill object takes consecutive free slots of one block of a class of 32 B or
          more (best fit, whole slots, 16 bytes of them ahead of the object), between the
          survivors; the rest goes to blocks of its own class.
Usage: scripts/bench/shape-bound.py [scale]   (scale 1: about 5 s)"""
import bisect
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
    refill_sizes, need = [], target - kept_live
    while need > 0:
        n = 1024 + rng.randrange(4096 - 1024 + 1)
        refill_sizes.append(n)
        need -= n

    def blocks_for(sizes):
        slots = {}
        for n in sizes:
            c = class_of(classes, n)
            slots[c] = slots.get(c, 0) + 1
        return sum(((k + capacity(c) - 1) // capacity(c)) * BLOCK for c, k in slots.items())

    refill = blocks_for(refill_sizes)
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
    # spans: the pages the survivors keep, plus those the refill objects placed in runs touch
    runs, span_pages, base = [], set(), 0
    for c, flags in sorted(per_class.items()):
        cap = capacity(c)
        for b in range(0, len(flags), cap):
            run = None
            for i, alive in enumerate(flags[b:b + cap] + [True]):
                off = base + (b // cap) * BLOCK + i * c
                if alive:
                    if i < cap and b + i < len(flags):
                        span_pages.update(range(off // PAGE, (off + c - 1) // PAGE + 1))
                    if run is not None and c >= 32:
                        runs.append((i - run, c, off - (i - run) * c))
                    run = None
                elif run is None:
                    run = i
        base += (len(flags) + cap - 1) // cap * BLOCK
    runs.sort(key=lambda r: r[0] * r[1])
    run_bytes = [r[0] * r[1] for r in runs]
    unplaced = []
    for n in refill_sizes:
        j = bisect.bisect_left(run_bytes, n + 16)
        while j < len(runs) and (n + 16 + runs[j][1] - 1) // runs[j][1] > runs[j][0]:
            j += 1
        if j == len(runs):
            unplaced.append(n)
            continue
        slots, c, start = runs.pop(j)
        run_bytes.pop(j)
        k = (n + 16 + c - 1) // c
        span_pages.update(range(start // PAGE, (start + k * c - 1) // PAGE + 1))
        if slots > k:
            rest = (slots - k, c, start + k * c)
            j = bisect.bisect_left(run_bytes, rest[0] * c)
            runs.insert(j, rest)
            run_bytes.insert(j, rest[0] * c)
    spans_peak = len(span_pages) * PAGE + blocks_for(unplaced) + table
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
    print(f"{'spans':<12} {len(span_pages) * PAGE / MB:>14.0f} {spans_peak / final_live:>12.2f} {0:>8}"
          f"   ({(len(refill_sizes) - len(unplaced))} of {len(refill_sizes)} refill objects in runs)")


if __name__ == "__main__":
    main()
