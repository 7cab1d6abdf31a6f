#!/usr/bin/env python3
"""Plot `fdpp bench-gemm -o json` results: time vs M per shape.

    scripts/plots/plot_gemm.py results.json out.png

One panel per [N, K] shape; one line per implementation: ImplA (gemv), ImplB as
its best configuration at each M (faint lines: each configuration), ImplC
(cuBLASLt). Log-log axes; the streaming-read floor (weight bytes / measured read
bandwidth) is drawn dashed, so the distance to the hardware limit is visible.
"""
import json
import math
import sys

import plot_common


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    plt = plot_common.pyplot("plot_gemm.py")
    if plt is None:
        return 1

    with open(argv[1]) as f:
        data = json.load(f)
    results = data.get("results", [])
    if not results:
        print(f"plot_gemm.py: {argv[1]} holds no results", file=sys.stderr)
        return 1
    read_gbs = data.get("read_bandwidth_gbs", 0)

    shapes = []
    for r in results:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    cols = min(3, len(shapes))
    rows = math.ceil(len(shapes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)

    for idx, shape in enumerate(shapes):
        ax = axes[idx // cols][idx % cols]
        rs = [r for r in results if r["shape"] == shape]
        n, k = rs[0]["n"], rs[0]["k"]

        def best_by_m(pred):
            best = {}
            for r in rs:
                if pred(r) and (r["m"] not in best or r["us"] < best[r["m"]]["us"]):
                    best[r["m"]] = r
            return dict(sorted(best.items()))

        # Faint: every ImplB configuration (its best split at each M).
        for cfg in sorted({r["config_name"] for r in rs if r["impl"] == "flat"}):
            b = best_by_m(lambda r, c=cfg: r["impl"] == "flat" and r["config_name"] == c)
            ax.plot(list(b), [v["us"] for v in b.values()], color="tab:orange", alpha=0.25,
                    linewidth=1)
        lines = [
            ("ImplA gemv", "tab:blue", lambda r: r["impl"] == "gemv"),
            ("ImplB flat (best config)", "tab:orange", lambda r: r["impl"] == "flat"),
            ("ImplC cuBLASLt", "tab:green", lambda r: r["impl"] == "cublas"),
        ]
        for label, color, pred in lines:
            b = best_by_m(pred)
            if b:
                ax.plot(list(b), [v["us"] for v in b.values()], marker="o", markersize=3,
                        color=color, label=label, linewidth=1.8)
        if read_gbs > 0:
            ms = sorted({r["m"] for r in rs})
            floor = [(2.0 * n * k + 2.0 * m * (n + k)) / (read_gbs * 1e9) * 1e6 for m in ms]
            ax.plot(ms, floor, linestyle="--", color="gray", linewidth=1,
                    label=f"read floor ({read_gbs:.0f} GB/s)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{shape} [N={n}, K={k}]", fontsize=10)
        ax.set_xlabel("M (batch)")
        ax.set_ylabel("µs per call")
        ax.grid(True, which="both", alpha=0.3)
        if idx == 0:
            ax.legend(fontsize=8)
    for idx in range(len(shapes), rows * cols):
        axes[idx // cols][idx % cols].axis("off")
    fig.suptitle(f"fdpp bench-gemm | {data.get('device', data.get('gpu', '?'))} | "
                 f"{data.get('dtype', '?')} | {data.get('date', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=130)
    print(f"plot_gemm.py: wrote {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
