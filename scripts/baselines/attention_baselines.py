#!/usr/bin/env python3
"""torch SDPA baselines for fdpp bench-attention's configurations, and the side-by-side table.

    python3 scripts/baselines/attention_baselines.py --out results/attn_torch.json --md results/attn.md \\
        --fdpp results/attn_fdpp.json       # the JSON of `fdpp bench-attention -o json`

Backends (torch.nn.attention.sdpa_kernel):
  flash   SDPBackend.FLASH_ATTENTION: FlashAttention-2; with one query token it splits the KV
          sequence (FlashDecoding), the issue's "torch flash" column;
  cudnn   SDPBackend.CUDNN_ATTENTION: cuDNN's fused attention.

Decode: q (B, Hq, 1, D) against K, V (B, Hkv, L, D), GQA through enable_gqa=True (if a backend
refuses it, K and V are expanded to Hq heads and the row says gqa "expanded"; the bytes are still
counted as the logical B·Hkv·L·D·2·2 of K + V, as fdpp counts them). Copies of K/V spanning at
least 4x the L2 are rotated, `--calls` calls are captured into one CUDA graph (what a decode step
replays; no Python launch overhead in the timing) and the graph is replayed `--reps` times between
CUDA events: per call = replay / calls, median and best. If a backend cannot be captured, calls
are timed back to back between events instead (the row says timing "events").
Prefill: q, K, V (B, H, L, D), is_causal=True, one call per timing between events after warm-up;
FLOPs = 4·B·L²·D·H / 2 (causal), the convention of fdpp bench-attention and design.md.

Everything is written to --out after each configuration. --md writes the markdown table; with
--fdpp it merges fdpp's synchronized and unified rows into the same table and adds the issue's
goals: unified vs torch flash (geometric mean over the decode table), unified >= cuDNN at every
L >= 1024, and unified's share of fdpp's measured read bandwidth at L >= 8192.
Runs with the GPU machine's python3 (torch); --help works without torch.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402


int_list = common.int_list


def heads_list(text):
    out = []
    for item in text.split(","):
        q, _, kv = item.partition("/")
        q, kv = int(q), int(kv or q)
        if q < 1 or kv < 1 or q % kv:
            raise argparse.ArgumentTypeError(f"heads {item!r}: expected Hq/Hkv with Hq % Hkv == 0")
        out.append((q, kv))
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="torch SDPA (flash, cuDNN) decode and prefill attention timings on "
                    "fdpp bench-attention's configurations, and the merged table.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--what", default="decode,prefill", help="decode and/or prefill")
    ap.add_argument("--backends", default="flash,cudnn", help="flash and/or cudnn")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--batch", type=int_list, default=[1, 8], help="decode batch sizes")
    ap.add_argument("--lengths", type=int_list, default=[128, 1024, 8192, 32768],
                    help="decode context lengths")
    ap.add_argument("--heads", type=heads_list, default=[(32, 32), (32, 8)], help="decode Hq/Hkv")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--prefill-batch", type=int_list, default=[1, 4])
    ap.add_argument("--prefill-lengths", type=int_list, default=[1024, 4096, 8192])
    ap.add_argument("--prefill-heads", type=heads_list, default=[(32, 32)])
    ap.add_argument("--reps", type=int, default=20, help="timed replays / calls")
    ap.add_argument("--calls", type=int, default=32, help="decode calls per captured graph")
    ap.add_argument("--out", default="attention_baselines.json", help="JSON results")
    ap.add_argument("--md", default=None, help="markdown table to write")
    ap.add_argument("--fdpp", default=None, help="fdpp bench-attention -o json output to merge")
    ap.add_argument("--table-only", action="store_true",
                    help="only merge --out (existing) and --fdpp into --md; no GPU work")
    return ap.parse_args(argv)


# ---- timing (torch imported lazily: --help and --table-only work without it) ------------------

def sdpa_context(torch, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION}[backend])


def time_graph(torch, fn, calls, reps):
    """Per-call µs of `calls` calls captured in one graph: (median, best)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    for _ in range(2):
        graph.replay()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us = []
    for _ in range(reps):
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        us.append(start.elapsed_time(stop) * 1e3 / calls)
    return statistics.median(us), min(us)


def time_events(torch, fn, calls, reps):
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us = []
    for _ in range(reps):
        start.record()
        for i in range(calls):
            fn(i)
        stop.record()
        stop.synchronize()
        us.append(start.elapsed_time(stop) * 1e3 / calls)
    return statistics.median(us), min(us)


def bench_decode(torch, backend, dtype, b, L, hq, hkv, d, args, l2_bytes):
    F = torch.nn.functional
    kv_bytes = 2 * b * hkv * L * d * 2
    copies = max(1, min(64, math.ceil(4 * l2_bytes / kv_bytes)))
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = (torch.rand(b, hq, 1, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1)
    ks = [(torch.rand(b, hkv, L, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1)
          for _ in range(copies)]
    vs = [(torch.rand(b, hkv, L, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1)
          for _ in range(copies)]
    gqa = "native" if hq == hkv else "enable_gqa"
    with sdpa_context(torch, backend):
        try:
            F.scaled_dot_product_attention(q, ks[0], vs[0], enable_gqa=hq != hkv)
            torch.cuda.synchronize()
        except RuntimeError:
            if hq == hkv:
                raise
            rep = hq // hkv
            ks = [k.repeat_interleave(rep, dim=1) for k in ks]
            vs = [v.repeat_interleave(rep, dim=1) for v in vs]
            gqa = "expanded"
        use_gqa = gqa == "enable_gqa"

        def call(i):
            return F.scaled_dot_product_attention(q, ks[i % copies], vs[i % copies],
                                                  enable_gqa=use_gqa)
        calls = max(args.calls, copies)
        try:
            us, us_min = time_graph(torch, call, calls, args.reps)
            timing = "graph"
        except Exception:  # noqa: BLE001 - some backends cannot be captured: time eagerly
            torch.cuda.synchronize()
            us, us_min = time_events(torch, call, calls, args.reps)
            timing = "events"
    return {"us": us, "us_min": us_min, "gbs": kv_bytes / (us * 1e-6) / 1e9, "bytes": kv_bytes,
            "copies": copies, "gqa": gqa, "timing": timing}


def bench_prefill(torch, backend, dtype, b, L, hq, hkv, d, args):
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(2)
    q = torch.rand(b, hq, L, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1
    k = torch.rand(b, hkv, L, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1
    v = torch.rand(b, hkv, L, d, device="cuda", generator=gen, dtype=dtype) * 2 - 1
    with sdpa_context(torch, backend):
        us, us_min = time_events(
            torch, lambda i: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                            enable_gqa=hq != hkv), 1, args.reps)
    flops = 4.0 * b * L * L * d * hq / 2
    return {"us": us, "us_min": us_min, "tflops": flops / (us * 1e-6) / 1e12}


def run(args):
    import torch
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
    meta = {"gpu": props.name, "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "dtype": args.dtype,
            "head_dim": args.head_dim,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": common.git_commit(),
            "results": []}
    what = args.what.split(",")
    backends = args.backends.split(",")

    def save():
        common.write_json(args.out, meta, indent=1)

    jobs = []
    if "decode" in what:
        jobs += [("decode", b, L, h) for h in args.heads for b in args.batch for L in args.lengths]
    if "prefill" in what:
        jobs += [("prefill", b, L, h) for h in args.prefill_heads for b in args.prefill_batch
                 for L in args.prefill_lengths]
    for kind, b, L, (hq, hkv) in jobs:
        for backend in backends:
            row = {"kind": kind, "backend": backend, "dtype": args.dtype, "batch": b,
                   "length": L, "heads_q": hq, "heads_kv": hkv}
            try:
                if kind == "decode":
                    row.update(bench_decode(torch, backend, dtype, b, L, hq, hkv, args.head_dim,
                                            args, l2))
                else:
                    row.update(bench_prefill(torch, backend, dtype, b, L, hq, hkv, args.head_dim,
                                             args))
            except Exception as e:  # noqa: BLE001 - record and go on: one row must not stop all
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            torch.cuda.empty_cache()
            meta["results"].append(row)
            print(f"{kind} {backend} b{b} L{L} {hq}/{hkv}: "
                  f"{row.get('us', float('nan')):.1f} us {row.get('error', '')}", flush=True)
            save()
    return meta


# ---- the merged table ----------------------------------------------------------------------------

def key(r):
    return (r["kind"], r["batch"], r["length"], r["heads_q"], r["heads_kv"])


def fmt_us(r):
    return f"{r['us']:.1f}" if r and "us" in r else "-"


def markdown(torch_meta, fdpp_meta):
    torch_rows = {(key(r), r["backend"]): r for r in torch_meta.get("results", [])
                  if r.get("dtype") == torch_meta.get("dtype")}
    dtype = torch_meta.get("dtype", "fp16")
    fdpp_dtype = {"fp16": "f16", "bf16": "bf16"}[dtype]
    fdpp_rows = {}
    read_bw = 0.0
    if fdpp_meta:
        read_bw = fdpp_meta.get("read_bandwidth_gbs", 0.0)
        for r in fdpp_meta.get("results", []):
            if r["dtype"] == fdpp_dtype:
                fdpp_rows[(key(r), r["softmax"])] = r
    keys = sorted({k for k, _ in torch_rows} | {k for k, _ in fdpp_rows},
                  key=lambda k: (k[0] != "decode", k[3], k[4], k[1], k[2]))
    out = [f"# Attention, {dtype}, head_dim {torch_meta.get('head_dim')}: fdpp vs torch SDPA",
           "", f"GPU {torch_meta.get('gpu')}, torch {torch_meta.get('torch')}, cuDNN "
           f"{torch_meta.get('cudnn')}, {torch_meta.get('date')}"
           + (f"; fdpp: {fdpp_meta.get('gpu')}, {fdpp_meta.get('date')}, measured read bandwidth "
              f"{read_bw:.0f} GB/s" if fdpp_meta else ""), ""]
    ratios_flash, below_cudnn, bw_share = [], [], []
    for kind in ("decode", "prefill"):
        ks = [k for k in keys if k[0] == kind]
        if not ks:
            continue
        metric = "GB/s" if kind == "decode" else "TFLOP/s"
        val = (lambda r: f"{r['gbs']:.0f}") if kind == "decode" else \
              (lambda r: f"{r['tflops']:.1f}")
        out += [f"## {kind}", "",
                "| B | L | Hq/Hkv | fdpp sync µs | fdpp unified µs | torch flash µs | "
                "cuDNN µs | "
                f"unified {metric} | flash {metric} | cuDNN {metric} | unified vs sync | "
                f"unified vs flash | unified vs cuDNN |",
                "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for k in ks:
            s, u = fdpp_rows.get((k, "sync")), fdpp_rows.get((k, "unified"))
            f, c = torch_rows.get((k, "flash")), torch_rows.get((k, "cudnn"))

            def ratio(a, b):  # speedup of b over a: a's µs / b's µs
                return f"{a['us'] / b['us']:.3f}×" if a and b and "us" in a and "us" in b else "-"
            out.append(f"| {k[1]} | {k[2]} | {k[3]}/{k[4]} | {fmt_us(s)} | {fmt_us(u)} | "
                       f"{fmt_us(f)} | {fmt_us(c)} | {val(u) if u else '-'} | "
                       f"{val(f) if f and 'us' in f else '-'} | "
                       f"{val(c) if c and 'us' in c else '-'} | {ratio(s, u)} | {ratio(f, u)} | "
                       f"{ratio(c, u)} |")
            if kind == "decode" and u:
                if f and "us" in f:
                    ratios_flash.append(f["us"] / u["us"])
                if c and "us" in c and k[2] >= 1024 and u["us"] > c["us"]:
                    below_cudnn.append(k)
                if k[2] >= 8192 and read_bw > 0:
                    bw_share.append((k, u["gbs"] / read_bw))
        out.append("")
    if ratios_flash:
        geo = math.exp(sum(math.log(x) for x in ratios_flash) / len(ratios_flash))
        out.append(f"- decode, unified vs torch flash, geometric mean of flash µs / unified µs: "
                   f"**{geo:.3f}×** over {len(ratios_flash)} configurations (goal ≥ 1.2×)")
    if fdpp_rows and torch_rows:
        out.append("- decode, unified slower than cuDNN at L ≥ 1024: "
                   + (", ".join(f"B{k[1]} L{k[2]} {k[3]}/{k[4]}" for k in below_cudnn)
                      if below_cudnn else "none (goal: none)"))
    if bw_share:
        worst = min(bw_share, key=lambda x: x[1])
        out.append(f"- decode, unified at L ≥ 8192: worst {100 * worst[1]:.1f}% of the measured "
                   f"read bandwidth (B{worst[0][1]} L{worst[0][2]} {worst[0][3]}/{worst[0][4]}; "
                   f"goal ≥ 80%)")
    errors = [r for r in torch_meta.get("results", []) if "error" in r]
    for r in errors:
        out.append(f"- torch {r['backend']} {r['kind']} B{r['batch']} L{r['length']} "
                   f"{r['heads_q']}/{r['heads_kv']}: {r['error']}")
    return "\n".join(out) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.table_only:
        with open(args.out) as f:
            meta = json.load(f)
    else:
        meta = run(args)
    fdpp = None
    if args.fdpp:
        with open(args.fdpp) as f:
            fdpp = json.load(f)
    table = markdown(meta, fdpp)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
