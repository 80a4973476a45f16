#!/usr/bin/env python3
"""alloc_py_threads.py - allocation-heavy Python with threads, deterministic output.

Producer threads build dicts, lists, strings, bytes and sets and pass them through queues to
consumer threads, which transform them and drop them (so objects die in a thread other than
the one that created them). The printed digests do not depend on scheduling or on the hash
seed; the output must be byte-identical with and without LD_PRELOAD=libbobox.so (the system
test also runs it with PYTHONMALLOC=malloc so every object goes through malloc).
Usage: alloc_py_threads.py [scale]   (default 1)
"""
import hashlib
import queue
import sys
import threading

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 1
PRODUCERS, CONSUMERS = 3, 3
ITEMS = 1500 * SCALE  # per producer
DONE = object()


def make_item(pid, i):
    n = (i * 7 + pid) % 200
    d = {f"k{pid}-{i}-{j}": [j, str(j) * (j % 7), (j, i)] for j in range(n)}
    d["blob"] = bytes((i + k) % 256 for k in range((i * 131) % 5000))
    d["text"] = "-".join(f"w{(i * j) % 997}" for j in range(i % 150))
    d["set"] = {(i * j) % 1009 for j in range(i % 300)}
    if i % 250 == 0:
        d["big"] = "x" * (200000 + i)          # a few large strings (malloc'ed)
        d["biglist"] = list(range(50000))
    return (pid, i, d)


def digest_item(item):
    pid, i, d = item
    h = hashlib.sha256()
    h.update(f"{pid}:{i}".encode())
    for k in sorted(k for k in d if k.startswith("k")):
        v = d[k]
        h.update(k.encode())
        h.update(repr(v).encode())
    h.update(d["blob"])
    h.update(d["text"].encode())
    h.update(repr(sorted(d["set"])).encode())
    if "big" in d:
        h.update(str(len(d["big"])).encode())
        h.update(str(sum(d["biglist"])).encode())
    # transform: build new containers from the old ones, then drop everything
    words = d["text"].split("-")
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    inverted = {v: [k for k in sorted(counts) if counts[k] == v] for v in set(counts.values())}
    h.update(repr(sorted(inverted.items())).encode())
    return h.hexdigest()


def producer(pid, q):
    for i in range(ITEMS):
        q.put(make_item(pid, i))
    q.put(DONE)


def consumer(q, out, lock, producers_left):
    local = []
    while True:
        item = q.get()
        if item is DONE:
            with lock:
                producers_left[0] -= 1
                last = producers_left[0] == 0
            if last:
                for _ in range(CONSUMERS - 1):
                    q.put(DONE)
            break
        local.append((item[0], item[1], digest_item(item)))
        del item
    with lock:
        out.extend(local)


def main():
    q = queue.Queue(maxsize=64)
    out = []
    lock = threading.Lock()
    producers_left = [PRODUCERS]
    threads = [threading.Thread(target=producer, args=(p, q)) for p in range(PRODUCERS)]
    threads += [threading.Thread(target=consumer, args=(q, out, lock, producers_left))
                for _ in range(CONSUMERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.sort()
    total = hashlib.sha256()
    for pid, i, dg in out:
        total.update(f"{pid}/{i}/{dg}\n".encode())
    print(f"items {len(out)}")
    print(f"first {out[0][2]}")
    print(f"last {out[-1][2]}")
    print(f"total {total.hexdigest()}")


if __name__ == "__main__":
    main()
