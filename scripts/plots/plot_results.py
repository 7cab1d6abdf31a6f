#!/usr/bin/env python3
"""Plot the JSON behind docs/results.md into docs/img/ (needs matplotlib; the page itself does not).

    scripts/plots/plot_results.py [--results docs/results] [--out docs/img]

Writes, per bench_<model>.json, results_<model>_decode.png: decode tok/s per (batch, context) with
the % of roofline on each bar and Hugging Face compiled beside it where hf_<model>.json measured the
same configuration; per attention_fdpp_<name>.json, results_<name>_attention.png: fdpp's time as a
ratio of cuDNN's and torch flash's (above 1 fdpp is faster), one bar pair per configuration.
"""
import argparse
import os
import sys

import plot_common
import results_page


def plot_decode(plt, model, bench, hf, out):
    rows = sorted(bench["results"], key=lambda r: (r["prompt"], r["batch"]))
    compiled = {(r["batch"], r["prompt"]): r for r in hf.get("results", [])
                if r.get("mode") == "compiled" and r.get("status", "ok") == "ok"}
    labels = [f"b{r['batch']}\nctx {results_page.context_label(r['prompt'])}" for r in rows]
    xs = list(range(len(rows)))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4.2))
    bars = ax.bar([x - 0.2 for x in xs], [r["decode_tokens_per_s"] for r in rows], 0.4,
                  label="fdpp", color="tab:blue")
    for b, r in zip(bars, rows):
        if r.get("roofline_pct"):
            ax.annotate(f"{r['roofline_pct']:.0f}%", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=8)
    hx = [x + 0.2 for x, r in zip(xs, rows) if (r["batch"], r["prompt"]) in compiled]
    hy = [compiled[(r["batch"], r["prompt"])]["decode_tok_s"] for r in rows
          if (r["batch"], r["prompt"]) in compiled]
    if hx:
        hb = ax.bar(hx, hy, 0.4, label="HF compiled", color="tab:gray")
        for b, y in zip(hb, hy):
            ax.annotate(f"{y:.0f}", (b.get_x() + b.get_width() / 2, y), ha="center", va="bottom",
                        fontsize=8)
    ax.set_xticks(xs, labels)
    ax.set_yscale("log")
    ax.set_ylim(bottom=min([r["decode_tokens_per_s"] for r in rows] + hy) / 2)
    ax.set_ylabel("decode tokens/s (log)")
    ax.set_title(f"{model} decode, {bench.get('gpu', '?')}, {bench.get('commit', '?')} "
                 f"({bench.get('date', '?')}); % = of the read roofline", fontsize=9)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, f"results_{model}_decode.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_attention(plt, name, fd, torch, out):
    def key(r):
        return (results_page.dtype_name(r.get("dtype", "fp16")), r["kind"], r["batch"], r["length"], r["heads_q"], r["heads_kv"])

    ours = {}
    for r in fd.get("results", []):
        if r["softmax"] == "unified" or key(r) not in ours:
            ours[key(r)] = r
    base = {(r["backend"],) + key(r): r for r in torch.get("results", []) if "error" not in r}
    # As on the page: GQA rows first, then MHA, each by batch and length.
    keys = sorted((k for k in ours if any((b,) + k in base for b in ("cudnn", "flash"))),
                  key=lambda k: (k[1], k[0], k[4] == k[5], k[4], k[5], k[2], k[3]))
    if not keys:
        return None
    xs = list(range(len(keys)))
    fig, ax = plt.subplots(figsize=(max(7, 0.45 * len(keys) + 2), 4.2))
    for off, backend, color in ((-0.2, "cudnn", "tab:green"), (0.2, "flash", "tab:orange")):
        ys = [base[(backend,) + k]["us"] / ours[k]["us"] if (backend,) + k in base else 0 for k in keys]
        ax.bar([x + off for x in xs], ys, 0.4, label=f"{backend} µs / fdpp µs", color=color)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(xs, [f"{k[1]}\nB{k[2]}\nL{k[3]}\n{k[4]}/{k[5]}" for k in keys], fontsize=7)
    ax.set_ylabel("speed-up of fdpp (above 1: fdpp faster)")
    ax.set_title(f"attention, {fd.get('gpu', '?')}, {fd.get('commit', '?')} ({fd.get('date', '?')})",
                 fontsize=9)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, f"results_{name}_attention.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=results_page.RESULTS, help="folder of the JSON files")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(results_page.PAGE), "img"),
                    help="folder for the PNGs")
    args = ap.parse_args(argv)
    plt = plot_common.pyplot("plot_results.py")
    if plt is None:
        return 1
    os.makedirs(args.out, exist_ok=True)
    written = []
    hfs = results_page.files("hf_", args.results)
    for model, (_, bench) in results_page.files("bench_", args.results).items():
        written.append(plot_decode(plt, model, bench, hfs.get(model, (None, {}))[1], args.out))
    torch = results_page.files("attention_torch_", args.results)
    for name, (_, fd) in results_page.files("attention_fdpp_", args.results).items():
        written.append(plot_attention(plt, name, fd, torch.get(name, (None, {}))[1], args.out))
    for p in written:
        if p:
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
