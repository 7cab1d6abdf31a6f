#!/usr/bin/env python3
"""Issue 6's ablation grid as markdown: one `fdpp bench` output per (softmax, gemm) cell.

Reads the markdown reports of `fdpp bench ... --softmax S --gemm G` saved as
`DIR/abl_S_G.md` (and, for the long contexts that need an engine of their own,
`DIR/abl32k_S_G.md`), as the `ablation` stage of `scripts/gpu_check.sh` writes them, and
prints two tables: decode tokens/s with the % of the bench's own roofline per (batch,
context) row, one column per cell, the ratio of two cells (default sync+auto over
sync+cublas: the dispatch table's gain) and the fastest cell; then prefill milliseconds per
(batch, prompt) row.

  scripts/profile/ablation_table.py DIR [--reference sync:cublas] [--ratio sync:auto]
"""
import argparse
import os
import re
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|(.*)\|\s*$")
ORDER = ["sync:cublas", "sync:auto", "unified:cublas", "unified:auto", "sync:gemv", "sync:flat",
         "unified:gemv", "unified:flat"]


def parse_bench(path):
    """{(b, p): {prefill_ms, decode_tps, roofline_pct}} from one `fdpp bench` markdown report."""
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if not m:
                continue
            b, p = int(m.group(1)), int(m.group(2))
            cells = [c.strip() for c in m.group(4).split("|")]
            # prefill ms (± std) | prefill tok/s | decode ms/step | decode tok/s | GB/s | % roofline | roofline tok/s
            rows[(b, p)] = {"prefill_ms": float(cells[0].split()[0]),
                            "decode_tps": float(cells[3]),
                            "roofline_pct": float(cells[5].rstrip("%"))}
    return rows


def load(folder):
    grid = {}
    for name in sorted(os.listdir(folder)):
        m = re.match(r"abl(32k)?_(sync|unified)_(\w+)\.md$", name)
        if not m:
            continue
        key = f"{m.group(2)}:{m.group(3)}"
        grid.setdefault(key, {}).update(parse_bench(os.path.join(folder, name)))
    return grid


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--reference", default="sync:cublas", help="the cell ratios divide by")
    ap.add_argument("--ratio", default="sync:auto", help="the cell whose gain over the reference is shown")
    a = ap.parse_args()
    grid = load(a.folder)
    if not grid:
        sys.exit(f"no abl_*.md reports in {a.folder}")
    cells = [c for c in ORDER if c in grid] + sorted(c for c in grid if c not in ORDER)
    points = sorted({k for c in cells for k in grid[c]}, key=lambda k: (k[1], k[0]))

    head = " | ".join(c.replace(":", " + ") for c in cells)
    print(f"Decode tokens/s (% of roofline); ratio = {a.ratio} / {a.reference}\n")
    print(f"| b | ctx | {head} | ratio | best |")
    print("|--:|--:|" + "--:|" * len(cells) + "--:|:--|")
    for (b, p) in points:
        vals = [grid[c].get((b, p)) for c in cells]
        out = [f"{v['decode_tps']:.1f} ({v['roofline_pct']:.1f}%)" if v else "-" for v in vals]
        ref, new = grid.get(a.reference, {}).get((b, p)), grid.get(a.ratio, {}).get((b, p))
        ratio = f"{new['decode_tps'] / ref['decode_tps']:.3f}×" if ref and new else "-"
        best = max((v["decode_tps"], c) for v, c in zip(vals, cells) if v)[1].replace(":", " + ")
        print(f"| {b} | {p} | " + " | ".join(out) + f" | {ratio} | {best} |")

    print(f"\nPrefill ms (batch × prompt tokens in one forward)\n")
    print(f"| b | p | {head} |")
    print("|--:|--:|" + "--:|" * len(cells))
    for (b, p) in points:
        vals = [grid[c].get((b, p)) for c in cells]
        print(f"| {b} | {p} | " + " | ".join(f"{v['prefill_ms']:.2f}" if v else "-" for v in vals) + " |")


if __name__ == "__main__":
    main()
