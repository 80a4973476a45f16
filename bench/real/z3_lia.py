#!/usr/bin/env python3
"""A QF_LIA problem for z3 (scripts/bench/profile-real.sh): N integer variables in [-20, 20]
and N random constraints of five terms each (<=, >=, distinct). N=150, seed 2: satisfiable,
about 1.5 s of z3 4.8.12 natively, 2.6 G instructions.
Usage: z3_lia.py N SEED > file.smt2"""
import random
import sys

n, seed = int(sys.argv[1]), int(sys.argv[2])
random.seed(seed)
print("(set-logic QF_LIA)")
for i in range(n):
    print(f"(declare-const x{i} Int)")
for i in range(n):
    print(f"(assert (and (>= x{i} -20) (<= x{i} 20)))")
for _ in range(n):
    terms = " ".join(f"(* {random.randint(-9, 9)} x{random.randrange(n)})" for _ in range(5))
    op = random.choice(["<=", ">=", "distinct"])
    if op == "distinct":
        print(f"(assert (distinct (+ {terms}) {random.randint(-30, 30)}))")
    else:
        print(f"(assert ({op} (+ {terms}) {random.randint(-30, 30)}))")
print("(check-sat)")
