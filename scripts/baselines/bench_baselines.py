#!/usr/bin/env python3
"""Hugging Face transformers baselines for the configurations `fdpp bench` runs.

    python3 scripts/baselines/bench_baselines.py --model /tmp/models/llama-2-7b --out results/baselines.json
    python3 scripts/baselines/bench_baselines.py --model /tmp/models/llama-2-7b --quick      # b1 p128 gen 32, eager

Two modes, each over batch x prompt length:
  eager     model.generate with the default dynamic cache (what a plain transformers user gets);
  compiled  a StaticCache + torch.compile(mode="reduce-overhead"), as in the transformers guide
            "Optimizing inference / Static kv-cache and torch.compile": by default
            (--compile-style manual) model.forward is compiled, so prefill and decode both run
            compiled with CUDA graphs; --compile-style auto instead lets generate() compile the
            decode step itself (its automatic compile for compileable caches; prefill stays eager).

Per configuration, after --warmup untimed rounds (where compilation happens; its time is kept as
warmup_s), each of --reps rounds times two generate calls with CUDA events:
  T1 = generate(max_new_tokens=1): prefill of the batch + the first token (time to first token);
  TN = generate(max_new_tokens=gen, min_new_tokens=gen): greedy, EOS ignored.
prefill_ms = median T1; decode_ms_per_step = median (TN - T1) / (gen - 1), which cancels the
prefill and generate()'s fixed overhead; decode_tok_s = batch / decode step time. The decode steps
run at contexts p .. p+gen, as fdpp bench's do.

Results are written to --out after every configuration (a time-limited run keeps what it
measured); --resume skips configurations already measured in --out; --time-limit stops starting
new ones. Progress lines carry timestamps because compilation can take minutes.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402

log = common.log
int_list = common.int_list


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Hugging Face eager and static-cache + torch.compile baselines (prefill ms, "
                    "decode ms/step, tokens/s) for fdpp bench's configurations.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face model folder")
    ap.add_argument("--batch", type=int_list, default=[1, 8], help="batch sizes, e.g. 1,8")
    ap.add_argument("--prompt", type=int_list, default=[128, 1024, 8192],
                    help="prompt lengths, e.g. 128,1024,8192")
    ap.add_argument("--gen", type=int, default=128, help="new tokens per sequence (>= 2)")
    ap.add_argument("--reps", type=int, default=3, help="timed rounds (median reported)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed rounds first (compilation; one is enough for CUDA-graph replay)")
    ap.add_argument("--modes", default="eager,compiled", help="eager,compiled or one of them")
    ap.add_argument("--compile-style", choices=["manual", "auto"], default="manual",
                    help="manual: torch.compile(model.forward); auto: generate() compiles decode")
    ap.add_argument("--compile-mode", default="reduce-overhead",
                    help="torch.compile mode for --compile-style manual")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, eager, ...)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="baselines.json", help="JSON results (rewritten as it goes)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the configurations already measured in --out and skip them")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds; start no new configuration after this (0: no limit)")
    ap.add_argument("--quick", action="store_true",
                    help="sanity check: batch 1, prompt 128, gen 32, eager only")
    args = ap.parse_args(argv)
    if args.quick:
        args.batch, args.prompt, args.gen, args.modes = [1], [128], 32, "eager"
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.modes or any(m not in ("eager", "compiled") for m in args.modes):
        ap.error("--modes: eager, compiled or eager,compiled")
    if args.gen < 2:
        ap.error("--gen must be >= 2 (decode time is (T(gen) - T(1)) / (gen - 1))")
    if args.reps < 1 or args.warmup < 0:
        ap.error("--reps >= 1 and --warmup >= 0")
    return args


# ----------------------------------------------------------------------------------------------
# Model and environment.
# ----------------------------------------------------------------------------------------------


def load_model(args):
    import torch
    from transformers import AutoModelForCausalLM
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    try:  # transformers 5 spells it dtype; 4.x torch_dtype
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype,
                                                     attn_implementation=args.attn,
                                                     device_map=args.device)
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=dtype,
                                                     attn_implementation=args.attn,
                                                     device_map=args.device)
    return model.eval()


def model_summary(model):
    c = model.config
    n_params = sum(p.numel() for p in model.parameters())
    return {"model_type": c.model_type, "num_layers": c.num_hidden_layers,
            "hidden_size": c.hidden_size, "vocab_size": c.vocab_size, "params": n_params,
            "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters())}


def kv_shape(config):
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return heads, head_dim


def learned_positions_limit(config):
    """OPT-style learned position tables cannot go past max_position_embeddings (RoPE models
    can, and fdpp bench runs Llama-2 at 8192, so only these are skipped)."""
    if config.model_type in ("opt", "gpt2", "gpt_neo", "bloom"):
        return config.max_position_embeddings
    return None


# ----------------------------------------------------------------------------------------------
# Compiled mode set-up.
# ----------------------------------------------------------------------------------------------


class Compiled:
    """Switches the model into static-cache + torch.compile mode and back."""

    def __init__(self, model, style, mode):
        import torch
        self.model, self.style = model, style
        self.eager_forward = model.forward  # bound method, for priming caches outside the graph
        # Each configuration has new shapes; dynamo is reset between them, but a recompile limit
        # hit inside one would silently fall back to eager, so raise it.
        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob)))
        if style == "manual":
            # dynamic=False: specialise on every shape (prefill (b, p) and decode (b, 1) each
            # get their own graph) instead of a dynamic-shape graph after the second shape.
            model.forward = torch.compile(model.forward, mode=mode, fullgraph=True, dynamic=False)
            # generate() would otherwise compile __call__ again around the compiled forward.
            model.generation_config.disable_compile = True
        else:
            model.generation_config.disable_compile = False

    def new_cache(self, batch, max_len):
        import torch
        from transformers import StaticCache
        m = self.model
        try:  # transformers 5: batch, device and dtype are taken from the first update
            cache = StaticCache(config=m.config, max_cache_len=max_len)
        except TypeError:
            cache = StaticCache(config=m.config, max_batch_size=batch, max_cache_len=max_len,
                                device=m.device, dtype=m.dtype)
        # Allocate the cache tensors now, outside any compiled graph, so the compiled prefill
        # sees fixed buffers instead of tracing their lazy creation.
        heads, head_dim = kv_shape(m.config)
        try:
            cache.early_initialization(batch, heads, head_dim, m.dtype, m.device)
        except Exception:  # older/newer signature: one eager token does the same
            with torch.no_grad():
                ids = torch.zeros((batch, 1), dtype=torch.long, device=m.device)
                self.eager_forward(input_ids=ids, past_key_values=cache, use_cache=True)
            cache.reset()
        return cache

    def reset_between_configs(self):
        import torch
        torch._dynamo.reset()

    def restore(self):
        if "forward" in self.model.__dict__:
            del self.model.forward  # back to the class's (eager) forward
        self.model.generation_config.disable_compile = True


# ----------------------------------------------------------------------------------------------
# One configuration.
# ----------------------------------------------------------------------------------------------


def timed_generate(model, ids, n, pad_id, cache):
    """ms of one generate(ids, n new tokens), CUDA events around it."""
    import torch
    kwargs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                  min_new_tokens=n, do_sample=False, pad_token_id=pad_id)
    if cache is not None:
        cache.reset()
        kwargs["past_key_values"] = cache
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    out = model.generate(**kwargs)
    end.record()
    torch.cuda.synchronize()
    got = out.shape[1] - ids.shape[1]
    if got != n:
        raise RuntimeError(f"generate made {got} tokens, expected {n}")
    return start.elapsed_time(end)


def bench_config(model, mode, compiled, batch, prompt, args):
    import torch
    cfg = model.config
    g = torch.Generator().manual_seed(args.seed * 100003 + batch * 1009 + prompt)
    ids = torch.randint(3, cfg.vocab_size, (batch, prompt), generator=g).to(model.device)
    pad_id = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    cache = compiled.new_cache(batch, prompt + args.gen) if mode == "compiled" else None
    torch.cuda.reset_peak_memory_stats()

    t0 = time.perf_counter()
    for i in range(args.warmup):
        timed_generate(model, ids, 1, pad_id, cache)
        timed_generate(model, ids, args.gen, pad_id, cache)
        log(f"  warm-up {i + 1}/{args.warmup} done")
    warmup_s = time.perf_counter() - t0

    t1s, tns = [], []
    for _ in range(args.reps):
        t1s.append(timed_generate(model, ids, 1, pad_id, cache))
        tns.append(timed_generate(model, ids, args.gen, pad_id, cache))
    steps = [(tn - t1) / (args.gen - 1) for t1, tn in zip(t1s, tns)]
    prefill = statistics.median(t1s)
    step = statistics.median(steps)
    return {
        "prefill_ms": round(prefill, 3),
        "prefill_tok_s": round(batch * prompt / prefill * 1e3, 1),
        "decode_ms_per_step": round(step, 4),
        "decode_tok_s": round(batch / step * 1e3, 1),
        "generate_ms": round(statistics.median(tns), 3),
        "prefill_ms_all": [round(x, 3) for x in t1s],
        "decode_ms_per_step_all": [round(x, 4) for x in steps],
        "decode_ms_per_step_std": round(statistics.pstdev(steps), 4),
        "warmup_s": round(warmup_s, 1),
        "peak_memory_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2),
    }


# ----------------------------------------------------------------------------------------------
# Driver.
# ----------------------------------------------------------------------------------------------


def key_of(r):
    return (r["mode"], r["batch"], r["prompt"], r["gen"])


def markdown(results):
    lines = ["| mode | batch | prompt | gen | prefill ms | decode ms/step | decode tok/s | status |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        if r["status"] == "ok":
            lines.append(f"| {r['mode']} | {r['batch']} | {r['prompt']} | {r['gen']} | "
                         f"{r['prefill_ms']:.1f} | {r['decode_ms_per_step']:.2f} | "
                         f"{r['decode_tok_s']:.1f} | ok |")
        else:
            lines.append(f"| {r['mode']} | {r['batch']} | {r['prompt']} | {r['gen']} | - | - | - "
                         f"| {r['status']}: {r.get('error', '')[:80]} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    import torch
    import transformers
    if not torch.cuda.is_available():
        raise SystemExit("error: CUDA is not available; these baselines are GPU timings")

    previous = []
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            previous = [r for r in json.load(f).get("results", []) if r.get("status") == "ok"]
        log(f"resume: {len(previous)} configurations already measured in {args.out}")
    done = {key_of(r) for r in previous}

    log(f"loading {args.model} ({args.dtype}, attn {args.attn}), transformers "
        f"{transformers.__version__}, torch {torch.__version__}")
    model = load_model(args)
    report = {"model": os.path.abspath(args.model), "summary": model_summary(model),
              "env": common.environment(), "dtype": args.dtype, "attn": args.attn,
              "compile_style": args.compile_style, "compile_mode": args.compile_mode,
              "warmup": args.warmup, "reps": args.reps, "results": list(previous),
              "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}
    log(f"model loaded: {report['summary']['params'] / 1e9:.2f}B params on {report['env'].get('gpu')}")
    common.write_json(args.out, report)
    limit = learned_positions_limit(model.config)

    for mode in args.modes:
        compiled = Compiled(model, args.compile_style, args.compile_mode) if mode == "compiled" \
            else None
        for batch in args.batch:
            for prompt in args.prompt:
                r = {"mode": mode, "batch": batch, "prompt": prompt, "gen": args.gen}
                if key_of(r) in done:
                    continue
                if args.time_limit and time.perf_counter() - common.START > args.time_limit:
                    r.update(status="skipped", error="time limit")
                elif limit is not None and prompt + args.gen > limit:
                    r.update(status="skipped",
                             error=f"prompt+gen > max_position_embeddings {limit}")
                else:
                    log(f"{mode} b{batch} p{prompt} gen{args.gen}: start")
                    try:
                        r.update(bench_config(model, mode, compiled, batch, prompt, args),
                                 status="ok")
                        log(f"{mode} b{batch} p{prompt}: prefill {r['prefill_ms']:.1f} ms, decode "
                            f"{r['decode_ms_per_step']:.2f} ms/step = {r['decode_tok_s']:.1f} tok/s"
                            f" (warm-up {r['warmup_s']} s)")
                    except Exception as e:  # OOM, compile failure: record it, go on
                        r.update(status="error", error=f"{type(e).__name__}: {e}"[:2000],
                                 traceback=traceback.format_exc()[-4000:])
                        log(f"{mode} b{batch} p{prompt}: ERROR {type(e).__name__}: {e}"[:400])
                    finally:
                        if compiled:
                            compiled.reset_between_configs()
                        torch.cuda.empty_cache()
                report["results"].append(r)
                common.write_json(args.out, report)
        if compiled:
            compiled.restore()

    print()
    print(markdown(report["results"]))
    log(f"wrote {args.out}")
    return 0 if all(r["status"] != "error" for r in report["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
