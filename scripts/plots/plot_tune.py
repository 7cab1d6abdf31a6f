#!/usr/bin/env python3
"""Plot `fdpp tune --json-out FILE`: time vs M per shape, the inflection points marked.

    scripts/plots/plot_tune.py tune.json OUT_DIR

One PNG per [N, K] shape (OUT_DIR/tune_<name>_<N>x<K>.png); one line per
implementation: ImplA (gemv), ImplB as its best configuration at each M ("best
flat"), ImplC (cublas). Vertical lines at M1 (the last M where GEMV serves) and M2
(the last M where GEMV or flat GEMM serves; cuBLASLt above), as `fdpp tune` derived
them. Times are from the pass the table was derived from (pass 1). Log-2 M axis,
since the sweep is dense up to 64 and sparse above.
"""
import json
import os
import re
import sys

import plot_common


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    plt = plot_common.pyplot("plot_tune.py")
    if plt is None:
        return 1

    with open(argv[1]) as f:
        data = json.load(f)
    meas = [r for r in data.get("measurements", []) if r.get("pass", 1) == 1 and r["us"] > 0]
    shapes = data.get("shapes", [])
    if not meas or not shapes:
        print(f"plot_tune.py: {argv[1]} holds no measurements (was it written by fdpp tune --json-out?)",
              file=sys.stderr)
        return 1
    os.makedirs(argv[2], exist_ok=True)
    gpu = data.get("gpu", {}).get("summary", data.get("gpu", {}).get("name", "?"))

    written = []
    for s in shapes:
        n, k = s["n"], s["k"]
        rows = [r for r in meas if r["n"] == n and r["k"] == k]
        # Per implementation, the fastest run at each M (for flat: over its configurations).
        lines = {"gemv": {}, "flat": {}, "cublas": {}}
        for r in rows:
            best = lines[r["impl"]]
            if r["m"] not in best or r["us"] < best[r["m"]]:
                best[r["m"]] = r["us"]
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        style = {"gemv": ("ImplA gemv", "tab:green"), "flat": ("ImplB best flat", "tab:blue"),
                 "cublas": ("ImplC cuBLASLt", "tab:red")}
        for impl, pts in lines.items():
            if not pts:
                continue
            ms = sorted(pts)
            ax.plot(ms, [pts[m] for m in ms], marker=".", markersize=3, linewidth=1.2,
                    label=style[impl][0], color=style[impl][1])
        # M1 = M2 (the flat GEMM wins nowhere) is one line with one label, not two overprinted.
        marks = ([(s["m1"], "M1 = M2", "--")] if s["m1"] == s["m2"] else
                 [(s["m1"], "M1", "--"), (s["m2"], "M2", ":")])
        for m, name, ls in marks:
            if m > 0:
                ax.axvline(m + 0.5, color="gray", linestyle=ls, linewidth=1)
                ax.text(m + 0.5, ax.get_ylim()[1], f" {name} = {m}", va="top", fontsize=8)
        ax.set_xscale("log", base=2)
        top = max(r["m"] for r in rows)
        ticks = [2 ** i for i in range(0, 16) if 2 ** i <= top]
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.set_xlabel("M (tokens in the batch)")
        ax.set_ylabel("µs per call")
        regret = s.get("table_regret", {})
        ax.set_title(f"{s['name']} [N={n}, K={k}] {data.get('dtype', '')}\n{gpu}; "
                     f"table regret {100 * regret.get('max', 0):.1f}% (M {regret.get('worst_m', 0)})",
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        safe = re.sub(r"[^A-Za-z0-9_]+", "-", s["name"]).strip("-") or "shape"
        path = os.path.join(argv[2], f"tune_{safe}_{n}x{k}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
