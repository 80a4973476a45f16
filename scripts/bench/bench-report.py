#!/usr/bin/env python3
"""Turns a bench.sh CSV into tables (stdout and results/README.md) and the plot.

Usage: bench-report.py --csv FILE --meta FILE [--fastpath FILE] [--readme FILE]
                       [--plot FILE.png] [--rss DIR] [--memory-plot FILE.png] [--stdout]
Medians over the successful repetitions; ratios are median/median (lower is better for
time and memory); geometric means over the workloads where both sides have a number."""
import argparse
import csv
import math
import os
import statistics
import shutil
import subprocess
import sys

ORDER = ["glibc", "jemalloc", "mimalloc", "mimalloc3", "snmalloc", "tcmalloc", "bobox",
         "bobox-pin", "bobox-pin-compact", "bobox-pin-none"]
MAIN = ORDER[:ORDER.index("bobox-pin") + 1]   # the other pinning variants get their own table
GMEAN_COUNT = {}
GMEAN_KIND = {}                       # table title -> {"own"|"real": {alloc: geometric mean}}
# Baselines in muted colours, bobox in reds so it stands out.
COLORS = {"glibc": "#9e9e9e", "jemalloc": "#4e79a7", "mimalloc": "#59a14f",
          "mimalloc3": "#8cd17d", "snmalloc": "#f28e2b", "tcmalloc": "#b07aa1",
          "bobox": "#e15759", "bobox-pin": "#8c1c13"}
PIN = ["bobox", "bobox-pin", "bobox-pin-compact", "bobox-pin-none"]
# Real programs (Debian packages driven by a script); the rest are our own programs in bench/.
# CSVs written before the kind column fall back to this list.
REAL = {"python", "sort", "gcc", "clang", "sqlite", "postgres", "redis"}
# Workloads that run for a fixed time (bench/larson.c, bench/prodcons64.c): their wall time is
# the same under every allocator, so the time ratios and the plot compare time per operation
# (wall or CPU seconds / ops, ops = throughput x timed seconds) instead.
FIXED_TIME = {"larson", "prodcons64"}
# Memory shapes that wait after their work (bench/memshapes.c: 3 s for the decay delay before
# the memory after): their wall time is mostly that wait, so the time ratios compare the work
# they time themselves (the secs column) instead.
WAITS = {"memthreads", "memchurn"}
KIND = {}                             # workload -> "own" | "real", filled by load()


def read_meta(path):
    meta = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    return meta


def load(path):
    rows = list(csv.DictReader(open(path)))
    workloads, allocs, data = [], [], {}
    for r in rows:
        w, a = r["workload"], r["alloc"]
        if w not in workloads:
            workloads.append(w)
        if a not in allocs:
            allocs.append(a)
        d = data.setdefault((w, a), {"n": 0, "ok": 0, "status": []})
        d["n"] += 1
        d.setdefault("unit", r["unit"])
        d.setdefault("threads", r["threads"])
        KIND.setdefault(w, r.get("kind") or ("real" if w in REAL else "own"))
        if r["status"] == "ok":
            d["ok"] += 1
            for k in ("wall_s", "throughput", "maxrss_kb", "minflt"):
                try:
                    d.setdefault(k, []).append(float(r[k]))
                except ValueError:
                    pass
            add_time_per_work(d, w, r)
            for kv in (r.get("memory") or "").split(";"):  # the memory shapes' own measures
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    try:
                        d.setdefault("mem:" + k, []).append(float(v))
                    except ValueError:
                        pass
        else:
            d["status"].append(r["status"])
    allocs.sort(key=lambda a: ORDER.index(a) if a in ORDER else 99)
    return workloads, allocs, data


def add_time_per_work(d, w, r):
    """wall_work and cpu_work: the time ratios' measures. Seconds for fixed-work workloads
    (the work is the same under every allocator), seconds per operation for fixed-time ones."""
    ops = 1.0
    if w in FIXED_TIME:
        try:
            ops = float(r["throughput"]) * float(r["secs"])
        except ValueError:
            return
        if ops <= 0:
            return
    wall = ("secs",) if w in WAITS else ("wall_s",)
    for key, fields in (("wall_work", wall), ("cpu_work", ("utime_s", "stime_s"))):
        try:
            d.setdefault(key, []).append(sum(float(r[f]) for f in fields) / ops)
        except ValueError:
            pass


def fixed_time_note(workloads):
    notes = []
    fixed = [w for w in workloads if w in FIXED_TIME]
    if fixed:
        notes.append("%s run%s for a fixed time: %s of time per operation." % (
            ", ".join("`%s`" % w for w in fixed), "" if len(fixed) > 1 else "s",
            "their ratios are" if len(fixed) > 1 else "its ratio is"))
    waits = [w for w in workloads if w in WAITS]
    if waits:
        notes.append("%s wait%s 3 s after %s work: %s of the work's own time." % (
            ", ".join("`%s`" % w for w in waits), "" if len(waits) > 1 else "s",
            "their" if len(waits) > 1 else "its", "their ratios are" if len(waits) > 1 else "its ratio is"))
    return " ".join(notes)


def med(data, w, a, key):
    d = data.get((w, a))
    if not d or not d.get(key):
        return None
    return statistics.median(d[key])


def gmean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, nd=3):
    if x is None:
        return "NA"
    if abs(x) >= 1000:
        return "%.0f" % x
    return ("%%.%dg" % nd) % x if abs(x) < 1 else "%.*f" % (max(0, nd - 1 - int(math.log10(abs(x)))), x)


def fmt_thr(x):
    if x is None:
        return "NA"
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return "%.3g%s" % (x / div, suf)
    return "%.3g" % x


def fmt_ratio(x):
    return "%.2f×" % x if x else "NA"


def mark(data, w, a):
    d = data.get((w, a))
    if d and d["ok"] < d["n"]:
        return "*"                     # some repetitions failed
    return ""


def kind(w):
    return KIND.get(w, "real" if w in REAL else "own")


def table(title, head, rows, note=None):
    out = ["### " + title, ""]
    if note:
        out += [note, ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join("---" if i == 0 or h == "program" else "---:" for i, h in enumerate(head)) + "|")
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return out + [""]


def value_table(title, workloads, allocs, data, key, conv, note=None):
    rows = []
    for w in workloads:
        cells = [w, kind(w)]
        for a in allocs:
            v = med(data, w, a, key)
            cells.append((conv(v) if v is not None else "NA") + mark(data, w, a))
        rows.append(cells)
    return table(title, ["workload", "program"] + allocs, rows, note)


def ratio_table(title, workloads, allocs, data, key, ref, note=None):
    rows, per_alloc = [], {a: [] for a in allocs}
    for w in workloads:
        r0 = med(data, w, ref, key)
        cells = [w, kind(w)]
        for a in allocs:
            v = med(data, w, a, key)
            x = v / r0 if v is not None and r0 else None
            per_alloc[a].append(x)
            cells.append(("%.2f" % x if x is not None else "NA") + mark(data, w, a))
        rows.append(cells)
    g = [gmean(per_alloc[a]) for a in allocs]
    cnt = [sum(1 for x in per_alloc[a] if x) for a in allocs]
    # A mean over fewer workloads is not comparable: say so in the cell.
    rows.append(["**geometric mean**", "all"] + [
        ("**%.2f**" % x + (" (%d/%d)" % (c, len(workloads)) if c < len(workloads) else "")) if x else "NA"
        for x, c in zip(g, cnt)])
    by_kind = {}
    kinds = [k for k in ("own", "real") if any(kind(w) == k for w in workloads)]
    if len(kinds) > 1:
        for k in kinds:
            idx = [i for i, w in enumerate(workloads) if kind(w) == k]
            gk = [gmean([per_alloc[a][i] for i in idx]) for a in allocs]
            ck = [sum(1 for i in idx if per_alloc[a][i]) for a in allocs]
            rows.append(["geometric mean", k] + [
                ("%.2f" % x + (" (%d/%d)" % (c, len(idx)) if c < len(idx) else "")) if x else "NA"
                for x, c in zip(gk, ck)])
            by_kind[k] = dict(zip(allocs, gk))
    GMEAN_COUNT.update({(title, a): c for a, c in zip(allocs, cnt)})
    GMEAN_KIND[title] = by_kind
    return table(title, ["workload", "program"] + allocs, rows, note), dict(zip(allocs, g))


def plot(workloads, allocs, data, png):
    """Two panels: time and peak RSS relative to mimalloc, one bar per allocator."""
    allocs = [a for a in allocs if a in MAIN]
    if "mimalloc" not in allocs:
        return "no mimalloc results: no plot"
    base = os.path.splitext(png)[0]
    dat = base + ".dat"
    with open(dat, "w") as f:
        for key in ("wall_work", "maxrss_kb"):
            f.write("workload " + " ".join(allocs) + "\n")
            for w in workloads:
                ref = med(data, w, "mimalloc", key)
                vals = []
                for a in allocs:
                    v = med(data, w, a, key)
                    vals.append("%.4f" % (v / ref) if v and ref else "NaN")
                f.write(w + ("[real]" if kind(w) == "real" else "") + " " + " ".join(vals) + "\n")
            f.write("\n\n")
    gp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot-bench.gp")
    colors = " ".join(COLORS.get(a, "#777777") for a in allocs)
    if not shutil.which("gnuplot"):
        os.remove(dat)
        return "gnuplot is not installed (Debian: gnuplot-nox): no plot"
    r = subprocess.run(["gnuplot", "-e", "datafile='%s'; outfile='%s'; ncols=%d; colors='%s'"
                        % (dat, png, len(allocs), colors), gp], capture_output=True, text=True)
    os.remove(dat)
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()[-300:]


# The memory shapes (bench/memshapes.c): what each row divides, and by what.
MEMORY_ROWS = [
    ("memthreads", "1,000 threads each holding 330 KB: RSS / payload", "rss_alive_kb", "payload_kb"),
    ("memthreads", "the same, 3 s after every thread ended: RSS / payload", "rss_after_kb", "payload_kb"),
    ("memshape", "live set changing shape (16-512 B to 1-4 KB): peak RSS / live", "peak_kb", "live_kb"),
    ("memchurn", "threads that come and go: RSS 3 s after the last, MB", "rss_end_kb", None),
    ("memchurn", "the same: peak RSS, MB", "peak_kb", None),
]


def memory_table(allocs, data):
    rows = []
    for w, label, num, den in MEMORY_ROWS:
        cells = [label]
        for a in allocs:
            n, d = med(data, w, a, "mem:" + num), med(data, w, a, "mem:" + den) if den else 1024.0
            cells.append(("%.2f" % (n / d) if n is not None and d else "NA") + mark(data, w, a))
        if any(c.rstrip("*") != "NA" for c in cells[1:]):
            rows.append(cells)
    if not rows:
        return []
    return table("Memory shapes, medians (lower is better)", ["shape"] + allocs, rows,
                 "Resident memory the programs read from `/proc/self/status` at the moments named "
                 "(bench/memshapes.c); over time in `memory.png`.")


def memory_plot(rss_dir, allocs, png):
    """One panel per memory shape: resident memory over time, a line per allocator (run 1)."""
    shapes = [w for w in ("memthreads", "memshape", "memchurn")
              if any(os.path.exists(os.path.join(rss_dir, "%s-%s.tsv" % (w, os.path.basename(a)))) for a in allocs)]
    if not shapes:
        return "no RSS samples in %s: no memory plot" % rss_dir
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed (Debian: gnuplot-nox): no memory plot"
    gp = ['set terminal pngcairo size 1800,%d font ",10"' % (420 * len(shapes)), "set output '%s'" % png,
          "set multiplot layout %d,1 title 'resident memory over time (sampled every 20 ms)'" % len(shapes),
          "set grid", "set key outside right top", "set xlabel 'seconds'", "set ylabel 'RSS, MB'"]
    titles = {"memthreads": "1,000 threads holding 330 KB each, then ending (memthreads)",
              "memshape": "a live set changing shape (memshape)",
              "memchurn": "threads that come and go (memchurn)"}
    for w in shapes:
        plots = []
        for a in allocs:
            f = os.path.join(rss_dir, "%s-%s.tsv" % (w, os.path.basename(a)))
            if os.path.exists(f) and os.path.getsize(f):
                plots.append("'%s' using 1:($2/1024) with lines lw %d lc rgb '%s' title '%s'" % (
                    f, 3 if a == "bobox" else 1, COLORS.get(a, "#777777"), a))
        gp += ["set title '%s'" % titles[w], "plot " + ", ".join(plots)]
    gp.append("unset multiplot")
    r = subprocess.run(["gnuplot"], input="\n".join(gp), capture_output=True, text=True)
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()[-300:]


def fastpath_table(path):
    if not path or not os.path.exists(path):
        return []
    vals, allocs, sizes, kinds = {}, [], [], []
    for r in csv.DictReader(open(path)):
        kind = r.get("pair") or "malloc"  # files written before the C++ probe have no column
        for seen, v in ((allocs, r["alloc"]), (sizes, r["size"]), (kinds, kind)):
            if v not in seen:
                seen.append(v)
        vals[(kind, r["alloc"], r["size"])] = r["instr_per_pair"]
    out = []
    for kind in kinds:
        rows = [[a] + [vals.get((kind, a, s), "NA") for s in sizes] for a in allocs]
        if kind == "malloc":
            out += table("Hot path: instructions per malloc+free pair (single thread)",
                         ["allocator"] + ["%s B" % s for s in sizes], rows,
                         "From `scripts/bench/fastpath.sh`: callgrind instruction counts inside a "
                         "`malloc(size); *p = 1; free(p)` function, (Ir(2N) - Ir(N)) / N with N = 100,000, "
                         "so start-up costs cancel. Includes about 10 instructions of the probe itself (call, PLT jumps, test, store).")
        elif kind == "malloc-fifo":
            out += table("Hot path: instructions per malloc+free pair, FIFO (single thread)",
                         ["allocator"] + ["%s B" % s for s in sizes], rows,
                         "The same count when the 64 live objects form a queue: each `malloc` is "
                         "followed by the `free` of the object allocated 64 mallocs earlier "
                         "(`fastpath SIZE N fifo`), so the allocator cycles through 65 objects "
                         "instead of handing back the one just freed.")
        else:
            out += table("Hot path: instructions per C++ new+delete pair (single thread)",
                         ["allocator"] + ["%s B" % s for s in sizes], rows,
                         "The same count for `::operator new(size); *p = 1; ::operator delete(p, size)` "
                         "(bench/fastpath_new.cpp). glibc's row is libstdc++'s operators, which call malloc and free.")
    return out


def lock_table(path):
    if not path or not os.path.exists(path):
        return []
    rows = [[r["lock"], r["threads"], r["median_ns_per_op"], r["ratio_to_ttas"]] for r in csv.DictReader(open(path))]
    return table("The node lock under contention (bench/lockbench)",
                 ["lock", "threads", "median ns per acquisition", "relative to the spinlock"], rows,
                 "A critical section shaped like a node superblock-cache operation, with some private "
                 "work between acquisitions; 5 interleaved repetitions. `ttas-pause-yield` is the "
                 "allocator's lock (allocator/base/lock.h): test-and-test-and-set with pause, yielding "
                 "after 100 spins.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--fastpath")
    ap.add_argument("--lock")
    ap.add_argument("--readme")
    ap.add_argument("--plot")
    ap.add_argument("--rss")
    ap.add_argument("--memory-plot")
    ap.add_argument("--stdout", action="store_true")
    o = ap.parse_args()
    meta = read_meta(o.meta)
    workloads, allocs, data = load(o.csv)
    if not workloads:
        if o.stdout:
            print("\n".join(fastpath_table(o.fastpath)) or "bench-report: no runs in " + o.csv)
        return
    main_allocs = [a for a in allocs if a in MAIN or a not in ORDER]
    pin_allocs = [a for a in PIN if a in allocs]
    pin_workloads = [w for w in workloads if any((w, a) in data for a in PIN[2:])]

    fixed_note = fixed_time_note(workloads)
    out = []
    out += value_table("Wall time, median seconds", workloads, main_allocs, data, "wall_s",
                       lambda v: "%.3f" % v,
                       "`program`: `own` = our own program in `bench/`, `real` = a Debian program "
                       "(%s) driven by a script. "
                       "`*` = some repetitions failed (crash or timeout); NA = all failed or not run (in ratio tables: this cell or the reference has no number)."
                       % ", ".join(w for w in workloads if kind(w) == "real"))
    ref_mi = "mimalloc" if "mimalloc" in allocs else main_allocs[0]
    t_mi_title = "Wall time relative to %s (lower is better)" % ref_mi
    t_mi, g_mi = ratio_table(t_mi_title,
                             workloads, main_allocs, data, "wall_work", ref_mi, fixed_note or None)
    out += t_mi
    g_gl = {}
    if "glibc" in allocs and ref_mi != "glibc":  # else the table above is this one
        t_gl, g_gl = ratio_table("Wall time relative to glibc (lower is better)", workloads,
                                 main_allocs, data, "wall_work", "glibc", fixed_note or None)
        out += t_gl
    t_cpu, _ = ratio_table("CPU time (user + system) relative to %s (lower is better)" % ref_mi,
                           workloads, main_allocs, data, "cpu_work", ref_mi,
                           "Less sensitive than wall time to other load on a shared machine, "
                           "but blind to time spent waiting (locks, sleeping threads)."
                           + (" " + fixed_note if fixed_note else ""))
    out += t_cpu
    out += value_table("Peak RSS, median MB", workloads, main_allocs, data, "maxrss_kb",
                       lambda v: "%.1f" % (v / 1024))
    t_rss, g_rss = ratio_table("Peak RSS relative to %s (lower is better)" % ref_mi, workloads,
                               main_allocs, data, "maxrss_kb", ref_mi)
    out += t_rss
    mem_table = memory_table(main_allocs, data)
    out += mem_table
    out += value_table("Minor page faults, median", workloads, main_allocs, data, "minflt",
                       lambda v: "%d" % v)
    units = {w: data[(w, a)]["unit"] for (w, a) in data}
    thr_rows = []
    for w in workloads:
        thr_rows.append(["%s (%s)" % (w, units.get(w, "")), kind(w)] +
                        [fmt_thr(med(data, w, a, "throughput")) + mark(data, w, a)
                         for a in main_allocs])
    out += table("Workload throughput, median (higher is better)", ["workload (unit)", "program"] + main_allocs,
                 thr_rows, "Each workload's own measure of its timed section; for the real "
                 "programs, work units per second of wall time.")
    if len(pin_allocs) > 1 and pin_workloads:
        pt, _ = ratio_table("Pinning: wall time relative to unpinned bobox", pin_workloads,
                            pin_allocs, data, "wall_work", "bobox" if "bobox" in pin_allocs else pin_allocs[0],
                            "Multi-threaded workloads under `libbobox-pin.so` with "
                            "`BOBOX_PIN=scatter` (bobox-pin), `compact` and `none`.")
        out += pt
    fp = fastpath_table(o.fastpath)
    out += fp
    out += lock_table(o.lock)

    headline = []
    headline_tables = [t for t in {t for t, _ in GMEAN_COUNT} if not t.startswith("Pinning")]
    for a in main_allocs:
        parts = []
        if g_mi.get(a):
            split = GMEAN_KIND.get(t_mi_title, {})
            parts.append("time %.2f× %s" % (g_mi[a], ref_mi) + (
                " (own programs %s, real programs %s)" % tuple(
                    fmt_ratio(split[k].get(a)) for k in ("own", "real")) if len(split) == 2 else ""))
        if g_gl.get(a):
            parts.append("%.2f× glibc" % g_gl[a])
        if g_rss.get(a):
            parts.append("peak RSS %.2f× %s" % (g_rss[a], ref_mi))
        n = min([c for (t, b), c in GMEAN_COUNT.items() if b == a and t in headline_tables] or [0])
        headline.append("| %s | %s | %s |" % (a, ", ".join(parts) or "NA",
                        "all %d" % len(workloads) if n == len(workloads) else
                        "**%d of %d** (the rest failed)" % (n, len(workloads))))

    if o.stdout:
        print("\n".join(["Geometric means:", "| allocator | geometric mean | workloads |"] + headline + [""] + out))
    plot_msg = plot(workloads, allocs, data, o.plot) if o.plot else None
    if plot_msg:
        print("bench-report: " + plot_msg, file=sys.stderr)
    mem_msg = memory_plot(o.rss, main_allocs, o.memory_plot) if o.rss and o.memory_plot else None
    if mem_msg:
        print("bench-report: " + mem_msg, file=sys.stderr)
    if o.readme:
        m = meta
        mach = [
            "| | |", "|---|---|",
            "| CPU | %s |" % m.get("cpu", "?"),
            "| logical CPUs | %s (%s socket(s) × %s core(s) × %s thread(s)) |" % (
                m.get("cpus", "?"), m.get("sockets", "?"), m.get("cores_per_socket", "?"),
                m.get("threads_per_core", "?")),
            "| NUMA nodes | %s |" % m.get("numa_nodes", "?"),
            "| memory | %s |" % m.get("memory", "?"),
            "| virtualisation | %s |" % (m.get("hypervisor") or "none detected"),
            "| OS, kernel | %s, Linux %s |" % (m.get("os", "?"), m.get("kernel", "?")),
            "| glibc, gcc | %s, %s |" % (m.get("glibc", "?"), m.get("gcc", "?")),
            "| transparent huge pages | %s |" % m.get("thp", "?"),
            "| jemalloc, mimalloc, tcmalloc | %s, %s, %s (Debian packages) |" % (
                m.get("pkg_libjemalloc2") or "-", m.get("pkg_libmimalloc2.0") or "-",
                m.get("pkg_libtcmalloc-minimal4") or "-"),
            "| mimalloc3, snmalloc | %s, %s (built from source by `bench.sh`, CMake Release) |" % (
                m.get("rival_mimalloc3") or "-", m.get("rival_snmalloc") or "-"),
        ]
        skipped = m.get("skipped", "").split()
        lines = [
            "# Benchmark results",
            "",
            "Generated by `scripts/bench/bench.sh` (`make bench`, `make bench-full`); do not edit by hand. "
            "How to run and read these: [the project README](../README.md#benchmarks).",
            "",
            "Run: **%s**, mode `%s`, %s repetition(s), scale %s (merge sort %s), %s s in total, "
            "%s failed runs. Raw data: [`latest.csv`](latest.csv) (`%s`)." % (
                m.get("date", "?"), m.get("mode", "?"), m.get("runs", "?"), m.get("scale", "?"),
                m.get("mergesort_scale", "?"), m.get("duration_s", "?"), m.get("failures", "?"),
                m.get("csv", "?")),
            "",
        ]
        if m.get("bobox_build"):
            lines += ["bobox library measured: %s." % m["bobox_build"], ""]
        if skipped:
            lines += ["Skipped allocators: " + ", ".join("`%s` (%s)" % (s.split(":", 1)[0],
                      s.split(":", 1)[1].replace("_", " ") if ":" in s else "") for s in skipped), ""]
        lines += ["## Machine", ""] + mach + [""]
        lines += ["## Summary", "",
                  "Geometric means of the per-workload median ratios (lower is better); in "
                  "parentheses, the same over our own programs (`bench/`) and over the real programs "
                  "(%s):" % (", ".join(w for w in workloads if kind(w) == "real") or "none"), "",
                  "| allocator | geometric mean | workloads |", "|---|---|---|"] + headline + [""]
        if o.plot and not plot_msg:
            lines += ["![time and peak RSS relative to mimalloc](%s)" % os.path.basename(o.plot), ""]
        if mem_table:
            lines += ["## Memory", ""] + mem_table
            if o.memory_plot and not mem_msg:
                lines += ["![resident memory over time](%s)" % os.path.basename(o.memory_plot), ""]
        lines += ["## Tables", ""] + out
        with open(o.readme, "w") as f:
            f.write("\n".join(lines))


if __name__ == "__main__":
    main()
