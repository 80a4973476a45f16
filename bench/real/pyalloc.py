"""(j) An allocation-heavy Python program: builds, reshapes and drops dicts, lists, tuples,
strings and small objects. bench.sh runs it with PYTHONMALLOC=malloc so that every Python
allocation reaches the malloc under test. Usage: pyalloc.py SCALE"""
import json
import sys


class Node:
    __slots__ = ("key", "vals", "next")

    def __init__(self, key, vals, nxt):
        self.key = key
        self.vals = vals
        self.next = nxt


def round_(n, seed):
    table = {}
    head = None
    for i in range(n):
        k = "k%d-%d" % (i * 7919 % n, seed)
        vals = [i, str(i), (i, k), k * (1 + i % 5)]
        table[k] = vals
        head = Node(k, vals, head if i % 3 else None)
    words = sorted(table, key=lambda s: (len(s), s[::-1]))
    text = " ".join(words[: n // 2])
    parts = text.split(" ")
    blob = json.dumps({w: table[w][:2] for w in parts[: n // 4]})
    back = json.loads(blob)
    acc = sum(len(v[1]) for v in back.values())
    for k in list(table)[::2]:
        del table[k]
    return acc + len(table) + (head.key != "")


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    rounds = max(1, int(16 * scale))   # bench.sh counts the same rounds
    total = 0
    for r in range(rounds):
        total += round_(50000, r)
    print("RESULT workload=python rounds=%d check=%d" % (rounds, total))


main()
