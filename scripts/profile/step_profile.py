#!/usr/bin/env python3
"""Where one decode step's time goes: kernel durations and the gaps between them.

Reads the kernel trace of an Nsight Systems capture of `fdpp bench` or `fdpp generate`
(`nsys profile --cuda-graph-trace=node ...` then `nsys stats --report cuda_gpu_trace
--format csv`), or an Nsight Compute log of the kernels' durations (`ncu --metrics
gpu__time_duration.sum --clock-control none --cache-control none --csv --print-units base
--log-file LOG ...`: each kernel alone, so no gaps and no overlap), cuts it into steps at the argmax kernel (the last kernel of every decode
step), keeps the steps of the most common kernel count (the decode steps of one batch size
and context), and prints, per kernel position, the median duration and the median idle gap
before it, then the same summed per kernel family.

A gap is time in which no kernel of the step ran: with programmatic dependent launch the
next kernel's start overlaps its predecessor, so the gap is negative and the overlap is
shown as such.

  scripts/profile/step_profile.py TRACE.csv [--top 40]
"""
import argparse
import collections
import csv
import re
import statistics
import sys


def family(name):
    """The kernel's name without its namespace, template arguments and parameters."""
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    base = re.split(r"[<(]", name, maxsplit=1)[0].strip()
    base = base.split("::")[-1]
    return base.replace("void ", "")


def label(name, grid):
    """family and grid: the grid tells the GEMVs of the layer's shapes apart."""
    return f"{family(name)} {grid}"


def read_kernels(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu logs also hold "==PROF==" lines
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"{path}: no rows")
    keys = rows[0].keys()
    if "Metric Name" in keys:  # ncu: serialized kernels, laid end to end
        out, t = [], 0
        for r in sorted(rows, key=lambda r: int(r["ID"])):
            if r["Metric Name"] != "gpu__time_duration.sum":
                continue
            d = int(float(r["Metric Value"].replace(",", "")))
            out.append((t, d, label(r["Kernel Name"], r["Grid Size"])))
            t += d
        return out
    start = next(k for k in keys if k.startswith("Start"))
    dur = next(k for k in keys if k.startswith("Duration"))
    name = next(k for k in keys if k == "Name")
    out = []
    for r in rows:
        # Memory copies and sets have no grid; keep kernels only.
        if not r.get("GrdX") and not r.get("Grid X"):
            continue
        grid = "({},{},{})".format(r.get("GrdX", ""), r.get("GrdY", ""), r.get("GrdZ", ""))
        out.append((int(r[start]), int(r[dur]), label(r[name], grid)))
    out.sort()
    return out


def split_steps(kernels):
    steps, cur = [], []
    for k in kernels:
        cur.append(k)
        if k[2].startswith("argmax"):
            steps.append(cur)
            cur = []
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=0, help="print only the N positions with the most time")
    args = ap.parse_args()
    steps = split_steps(read_kernels(args.trace))
    if not steps:
        sys.exit("no argmax kernel: not a decode trace")
    count = collections.Counter(len(s) for s in steps).most_common(1)[0][0]
    steps = [s for s in steps if len(s) == count][1:]  # the first may hold warm-up effects
    if not steps:
        sys.exit("fewer than two steps of the same shape")
    positions = []
    for i in range(count):
        durs = [s[i][1] / 1e3 for s in steps]
        gaps = [(s[i][0] - (s[i - 1][0] + s[i - 1][1])) / 1e3 for s in steps] if i else [0.0]
        positions.append((i, steps[0][i][2], statistics.median(durs), statistics.median(gaps)))
    walls = [(s[-1][0] + s[-1][1] - s[0][0]) / 1e3 for s in steps]
    print(f"{len(steps)} steps of {count} kernels; median wall (first start to last end) "
          f"{statistics.median(walls):.1f} µs")
    rows = sorted(positions, key=lambda p: -p[2])[: args.top] if args.top else positions
    print("\n| # | kernel | µs | gap before µs |\n|---:|---|---:|---:|")
    for i, f, d, g in rows:
        print(f"| {i} | {f} | {d:.2f} | {g:.2f} |")
    fam = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for _, f, d, g in positions:
        fam[f][0] += 1
        fam[f][1] += d
        fam[f][2] += g
    print("\n| kernel family | count | Σ µs | Σ gap before µs |\n|---|---:|---:|---:|")
    for f, (n, d, g) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        print(f"| {f} | {n} | {d:.1f} | {g:.1f} |")
    print(f"| all | {count} | {sum(p[2] for p in positions):.1f} | {sum(p[3] for p in positions):.1f} |")


if __name__ == "__main__":
    main()
