#!/usr/bin/env python3
"""alloc_py_fork.py - fork while threads allocate, from Python.

Two threads keep allocating and dropping lists of strings while the main thread creates
multiprocessing pools with the "fork" start method (the children are forked while the
churn threads allocate), maps work over them and collects the results. The printed digest
is deterministic; a deadlocked child shows up as a timeout of the whole script.
Usage: alloc_py_fork.py [rounds]   (default 6)
"""
import hashlib
import multiprocessing as mp
import sys
import threading


def work(i):
    d = {str(j): [j] * (j % 50) for j in range(2000 + i)}
    s = "".join(f"{k}:{len(v)};" for k, v in sorted(d.items())[:200])
    return hashlib.sha256(s.encode()).hexdigest()[:16]


def churn(stop):
    while not stop.is_set():
        x = [str(i) * 10 for i in range(2000)]
        y = {i: bytes(i % 200) for i in range(500)}
        del x, y


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    mp.set_start_method("fork")
    stop = threading.Event()
    threads = [threading.Thread(target=churn, args=(stop,)) for _ in range(2)]
    for t in threads:
        t.start()
    out = []
    try:
        for r in range(rounds):
            with mp.Pool(4) as pool:
                out += pool.map(work, range(r * 20, r * 20 + 20))
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(f"results {len(out)}")
    print(f"digest {hashlib.sha256(''.join(out).encode()).hexdigest()}")


if __name__ == "__main__":
    main()
