#!/usr/bin/env python3
"""Writes docs/results.md from the JSON under docs/results/: today's numbers only (the dated
history is docs/experiments/log.md). Standard library only, so CI can run --check.

    python3 scripts/plots/results_page.py            # rewrite docs/results.md
    python3 scripts/plots/results_page.py --check    # exit 1 with a diff if the page is stale

Inputs, by file name, each in the format its tool writes:
  bench_<model>.json          fdpp bench -o json (plus "commit" and "gpu" where the tool has none)
  hf_<model>.json             scripts/baselines/bench_baselines.py --out
  gemm_<name>.json            fdpp bench-gemm -o json / --json-out
  attention_fdpp_<name>.json  fdpp bench-attention -o json
  attention_torch_<name>.json scripts/baselines/attention_baselines.py --out (same <name>: same call)
Every file may carry a "source" field saying where its numbers come from; the page prints it.
"""
import argparse
import difflib
import glob
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402

RESULTS = os.path.join(common.REPO, "docs", "results")
PAGE = os.path.join(common.REPO, "docs", "results.md")


def files(pattern, results_dir):
    """{suffix: json} for results_dir/<pattern>*.json, in name order."""
    out = {}
    for path in sorted(glob.glob(os.path.join(results_dir, pattern + "*.json"))):
        out[os.path.basename(path)[len(pattern):-len(".json")]] = (os.path.basename(path),
                                                                    common.read_json(path))
    return out


def num(x, fmt="{:.1f}"):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def provenance(name, j, date=None, commit=None, gpu=None):
    parts = [f"`docs/results/{name}`"]
    for label, v in (("commit", commit or j.get("commit")), ("date", date or j.get("date")),
                     ("GPU", gpu or j.get("gpu") or j.get("device"))):
        if v:
            parts.append(f"{label} {'`' + v + '`' if label == 'commit' else v}")
    lines = ["Source: " + ", ".join(parts) + "."]
    if j.get("command"):
        lines.append(f"Command: `{j['command']}`.")
    if j.get("source"):
        lines.append(f"Provenance: {j['source']}.")
    return lines


def context_label(p):
    return f"{p // 1024}K" if p >= 1024 and p % 1024 == 0 else str(p)


def image(img_dir, name, alt):
    """A link to docs/img/NAME when plot_results.py has made it (the page never needs it)."""
    if img_dir and os.path.exists(os.path.join(img_dir, name)):
        return [f"![{alt}](img/{name})", ""]
    return []


def end_to_end(results_dir, img_dir=None):
    out = []
    hfs = files("hf_", results_dir)
    for model, (name, j) in files("bench_", results_dir).items():
        hf_name, hf = hfs.get(model, (None, {}))
        compiled = {(r["batch"], r["prompt"]): r for r in hf.get("results", [])
                    if r.get("mode") == "compiled" and r.get("status", "ok") == "ok"}
        out.append(f"## End to end: {model}, decode")
        out.append("")
        out += provenance(name, j)
        if hf_name:
            env = hf.get("env", {})
            out += ["Hugging Face compiled (static cache + `torch.compile`): " +
                    provenance(hf_name, hf, env.get("date"), env.get("commit"), env.get("gpu"))[0][len("Source: "):]]
            out += [line for line in provenance(hf_name, hf)[1:]]
        out.append("")
        out.append("| batch | context | tok/s | ms/step | % of roofline | HF compiled tok/s | × HF compiled |")
        out.append("|--:|--:|--:|--:|--:|--:|--:|")
        for r in sorted(j["results"], key=lambda r: (r["prompt"], r["batch"])):
            h = compiled.get((r["batch"], r["prompt"]))
            ratio = r["decode_tokens_per_s"] / h["decode_tok_s"] if h else None
            out.append(f"| {r['batch']} | {context_label(r['prompt'])} | **{num(r['decode_tokens_per_s'])}** | "
                       f"{num(r.get('decode_ms_per_step'), '{:.3f}')} | {num(r.get('roofline_pct'))}% | "
                       f"{num(h['decode_tok_s']) if h else '–'} | {num(ratio, '{:.2f}×') if h else '–'} |")
        out.append("")
        out += image(img_dir, f"results_{model}_decode.png", f"{model} decode tokens/s")
    return out


def gemm(results_dir):
    out = []
    for label, (name, j) in files("gemm_", results_dir).items():
        rows = j.get("results", [])
        # bench-gemm writes every (impl, config, splits) it timed: the table keeps, per shape and
        # M, fdpp's fastest and cuBLASLt's fastest.
        best, cub, order = {}, {}, []
        for r in rows:
            k = (r["shape"], r["m"])
            if k not in best and k not in cub:
                order.append(k)
            d = cub if r.get("impl") == "cublas" else best
            if k not in d or r["us"] < d[k]["us"]:
                d[k] = r
        out += [f"## GEMM: {label}, per shape and M against cuBLASLt", ""]
        out += provenance(name, j)
        out += ["", "| shape | N × K | M | fdpp's fastest kernel | its µs | cuBLASLt µs | × cuBLASLt |",
                "| --- | --: | --: | --- | --: | --: | --: |"]
        for k in order:
            r, c = best.get(k), cub.get(k)
            if not r:
                continue
            ratio = c["us"] / r["us"] if c else None
            name = r.get("config_name")
            impl = r["impl"] + (f" {name}" if name and name != r["impl"] else "")
            shape = r["shape"].rsplit(":", 1)[-1]  # bench-gemm names shapes MODEL_DIR:shape
            out.append(f"| {shape} | {r.get('n', '?')} × {r.get('k', '?')} | {r['m']} | {impl} | "
                       f"{num(r['us'], '{:.2f}')} | {num(c and c['us'], '{:.2f}')} | {num(ratio, '{:.3f}×')} |")
        out.append("")
    return out


def dtype_name(d):
    """fdpp writes f16/bf16, the torch baselines fp16/bf16: one spelling, so their rows meet."""
    return {"fp16": "f16", "float16": "f16", "bfloat16": "bf16"}.get(d, d)


def attention(results_dir, img_dir=None):
    out = []
    torch = files("attention_torch_", results_dir)

    def key(r):
        return (dtype_name(r.get("dtype", "fp16")), r["batch"], r["length"], r["heads_q"], r["heads_kv"])

    for label, (name, j) in files("attention_fdpp_", results_dir).items():
        t_name, t = torch.get(label, (None, {}))
        base = {(r["kind"], r["backend"]) + key(r): r for r in t.get("results", []) if "error" not in r}
        for kind, title, rate, unit in (
                ("decode", "Decode attention against cuDNN and torch SDPA (flash)", "gbs", "GB/s"),
                ("prefill", "Prefill attention against cuDNN and torch flash", "tflops", "TFLOP/s")):
            rows = [r for r in j.get("results", []) if r["kind"] == kind]
            out += [f"## {title}: {label}", ""]
            out += provenance(name, j)
            if t_name:
                out += ["Baselines, same call: " + provenance(t_name, t)[0][len("Source: "):]]
            out.append("")
            if not rows:
                why = j.get("missing", {}).get(kind)
                out += [f"No {kind} measurement in `docs/results/{name}`" + (f": {why}." if why else "."), ""]
                continue
            # GQA rows first, then MHA; within each by batch and length.
            keys = sorted({key(r) for r in rows}, key=lambda k: (k[0], k[3] == k[4], k[3], k[4], k[1], k[2]))
            fd = {(r["softmax"],) + key(r): r for r in rows}
            out += [f"| dtype | B | L | Hq/Hkv | fdpp sync µs | fdpp unified µs | torch flash µs | cuDNN µs "
                    f"| fdpp {unit} | fdpp × flash | fdpp × cuDNN |",
                    "| --- |--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
            ratios = {"flash": [], "cudnn": []}
            for k in keys:
                s_, u = fd.get(("sync",) + k), fd.get(("unified",) + k)
                fl, cu = base.get((kind, "flash") + k), base.get((kind, "cudnn") + k)
                ours = u or s_  # unified where measured: the path the comparison is about

                def x(b):
                    return b["us"] / ours["us"] if b and ours and ours["us"] else None

                for bk, b in (("flash", fl), ("cudnn", cu)):
                    if x(b):
                        ratios[bk].append(x(b))
                out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]}/{k[4]} | {num(s_ and s_['us'])} | "
                           f"{num(u and u['us'])} | {num(fl and fl['us'])} | {num(cu and cu['us'])} | "
                           f"{num(ours.get(rate), '{:.0f}')} | {num(x(fl), '{:.3f}×')} | {num(x(cu), '{:.3f}×')} |")
            out.append("")
            for bk, label2 in (("flash", "torch flash"), ("cudnn", "cuDNN")):
                v = ratios[bk]
                if v:
                    g = math.exp(sum(math.log(a) for a in v) / len(v))
                    out.append(f"fdpp (unified) against {label2}: {g:.3f}× (geometric mean of {len(v)} rows).")
            out.append("")
            if kind == "decode":  # plot_results.py draws every kind measured in one chart
                out += image(img_dir, f"results_{label}_attention.png", f"attention speed-ups, {label}")
    return out


def render(results_dir=RESULTS, img_dir=None):
    out = ["# fdpp results", "",
           "<!-- Generated by scripts/plots/results_page.py from docs/results/*.json: do not edit. -->", "",
           "Today's numbers, one table per measurement, each with the commit, date and GPU it was "
           "measured on and its baselines from the same call. How each figure is measured, and every "
           "earlier one: [experiments/log.md](experiments/log.md). The plots are made by "
           "`scripts/plots/plot_results.py` (matplotlib) from the same JSON.", ""]
    out += end_to_end(results_dir, img_dir)
    out += gemm(results_dir)
    out += attention(results_dir, img_dir)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="do not write: exit 1 with a diff when the page differs from the JSON")
    ap.add_argument("--results", default=RESULTS, help="folder of the JSON files")
    ap.add_argument("--page", default=PAGE, help="the Markdown page")
    args = ap.parse_args(argv)
    page = render(args.results, os.path.join(os.path.dirname(os.path.abspath(args.page)), "img"))
    if args.check:
        try:
            with open(args.page, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = ""
        if current != page:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), page.splitlines(True),
                                                       args.page, "regenerated from " + args.results))
            print(f"results_page: {args.page} is stale; run python3 scripts/plots/results_page.py",
                  file=sys.stderr)
            return 1
        return 0
    with open(args.page, "w", encoding="utf-8") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
