#!/usr/bin/env python3
"""Compare fdpp's teacher-forced logits with Hugging Face transformers on the same random prompts.

    python3 scripts/compare/hf_compare.py --model /tmp/models/llama-2-7b --fdpp build/fdpp \
        --out results/hf_compare_llama-2-7b.json
    # ChatGLM2: fdpp reads the native folder, transformers the Glm twin (found as MODEL-glm)
    python3 scripts/compare/hf_compare.py --model /tmp/models/chatglm2-6b --fdpp build/fdpp --lengths 1,17,500

For every (batch, length) the script draws seeded random prompt ids in [3, vocab), writes them as
IDS.json (a list of sequences) and runs

    fdpp logits -m MODEL --ids IDS.json --out LOGITS.f32 --mode prefill|decode --device D --dtype T

whose output is float32 little-endian, the concatenation over sequences of (len_i, vocab) rows;
row t = the logits after feeding ids[0..t]. Batch 1 runs in prefill mode (one prompt) and, at
lengths <= --b1-decode-max-len, also in decode mode; larger batches run in decode mode (token by
token through batched decode steps). All fdpp runs happen first, then transformers
(AutoModelForCausalLM, one full forward per sequence, logits upcast to float32) computes the
reference once per (batch, length), shared by both modes.

Per (mode, batch, length) it reports the max over positions of ||fdpp - hf|| / ||hf|| (L2 over the
vocabulary at one position) and the fraction of positions with the same argmax; a case passes with
rel L2 <= --max-rel-l2 at every position, same argmax >= --min-argmax and no NaN/Inf. Writes JSON,
prints a markdown table, exits 1 if any case fails (2 on bad arguments).

--noise-floor adds rows that compare a second transformers run (the other attention kernel, in
--dtype) with the reference: the spread two correct implementations show, to read fdpp's against.
"""
import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402


parse_list = common.int_list


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="fdpp teacher-forced logits vs Hugging Face transformers on random prompts.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", required=True, help="model folder fdpp reads")
    ap.add_argument("--hf-model", help="model folder transformers reads (None: --model, or "
                                       "MODEL-glm for a native ChatGLM2 folder)")
    ap.add_argument("--fdpp", required=True, help="path to the fdpp binary")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--hf-dtype", choices=["fp16", "bf16", "fp32"],
                    help="dtype of the transformers reference (None: --dtype)")
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"],
                    help="transformers attention implementation of the reference")
    ap.add_argument("--lengths", default="1,17,128,1000", help="prompt lengths")
    ap.add_argument("--batch", default="1,3", help="batch sizes")
    ap.add_argument("--modes", default="auto",
                    help="auto (prefill for batch 1, decode for batch > 1 and for batch 1 at "
                         "short lengths) or a list of prefill,decode run at every batch and length")
    ap.add_argument("--b1-decode-max-len", type=int, default=17,
                    help="auto mode: batch 1 also runs in decode mode at lengths up to this")
    ap.add_argument("--ragged", action="store_true",
                    help="batch > 1: sequences of lengths L, 2L/3, L/3, ... instead of all L")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rel-l2", type=float, default=1e-2,
                    help="pass: relative L2 error at every position at most this")
    ap.add_argument("--min-argmax", type=float, default=0.99,
                    help="pass: fraction of positions with the same argmax at least this")
    ap.add_argument("--out", default="hf_compare.json", help="JSON results")
    ap.add_argument("--workdir", help="keep IDS.json and LOGITS.f32 files here (None: a temp dir)")
    ap.add_argument("--fdpp-args", default="",
                    help="extra arguments appended to 'fdpp logits', one string split like a "
                         "shell; write it with '=' when it starts with a dash: "
                         "--fdpp-args='--softmax sync'")
    ap.add_argument("--fdpp-timeout", type=int, default=1800, help="seconds per fdpp run")
    ap.add_argument("--noise-floor", action="store_true",
                    help="also compare transformers (other attention kernel, --dtype) with the "
                         "reference, as rows that do not count for pass/fail")
    args = ap.parse_args(argv)
    try:
        args.lengths = parse_list(args.lengths, "--lengths")
        args.batch = parse_list(args.batch, "--batch")
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if args.modes == "auto":
        args.modes = None
    else:
        args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        if not args.modes or any(m not in ("prefill", "decode") for m in args.modes):
            ap.error("--modes: 'auto' or a list of prefill,decode")
    args.hf_dtype = args.hf_dtype or args.dtype
    return args


# ----------------------------------------------------------------------------------------------
# Plan and prompts.
# ----------------------------------------------------------------------------------------------


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def vocab_size(cfg):
    # ChatGLM2's native config calls it padded_vocab_size.
    v = cfg.get("vocab_size") or cfg.get("padded_vocab_size")
    if not v:
        raise SystemExit("error: config.json has neither vocab_size nor padded_vocab_size")
    return int(v)


def resolve_hf_model(args, cfg):
    if args.hf_model:
        return args.hf_model
    if cfg.get("model_type") == "chatglm":
        twin = os.path.normpath(args.model) + "-glm"
        if os.path.isfile(os.path.join(twin, "config.json")):
            return twin
        raise SystemExit(f"error: {args.model} is a native ChatGLM2 folder, which transformers "
                         f"cannot load; write its Glm twin with make_random_model.py "
                         f"--chatglm-naming both (expected {twin}) or pass --hf-model")
    return args.model


def plan_cases(args):
    """[(mode, batch, length)] in run order."""
    cases = []
    for b in args.batch:
        for L in args.lengths:
            if args.modes:
                cases += [(m, b, L) for m in args.modes]
            elif b == 1:
                cases.append(("prefill", b, L))
                if L <= args.b1_decode_max_len:
                    cases.append(("decode", b, L))
            else:
                cases.append(("decode", b, L))
    return cases


def seq_lengths(batch, length, ragged):
    if not ragged or batch == 1:
        return [length] * batch
    fractions = [3, 2, 1]  # L, 2L/3, L/3, L, ... so sequences finish at different steps
    return [max(1, length * fractions[i % 3] // 3) for i in range(batch)]


def make_prompts(seed, batch, length, vocab, ragged):
    """Seeded random ids in [3, vocab): ids 0..2 are special (pad/bos/eos) in these families."""
    rng = random.Random(f"hf_compare/{seed}/{batch}/{length}")
    return [[rng.randrange(3, vocab) for _ in range(n)] for n in seq_lengths(batch, length, ragged)]


# ----------------------------------------------------------------------------------------------
# fdpp side.
# ----------------------------------------------------------------------------------------------


def run_fdpp(args, mode, seqs, workdir, tag):
    ids_path = os.path.join(workdir, f"ids_{tag}.json")
    out_path = os.path.join(workdir, f"logits_{tag}_{mode}.f32")
    with open(ids_path, "w") as f:
        json.dump(seqs, f)
    if os.path.exists(out_path):
        os.remove(out_path)  # never compare a stale file from an earlier run
    cmd = [args.fdpp, "logits", "-m", args.model, "--ids", ids_path, "--out", out_path,
           "--mode", mode, "--device", args.device, "--dtype", args.dtype]
    cmd += shlex.split(args.fdpp_args)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.fdpp_timeout)
        rc, tail = p.returncode, (p.stdout + p.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        rc, tail = None, f"timed out after {args.fdpp_timeout} s"
    except OSError as e:
        rc, tail = None, f"could not start: {e}"
    run = {"cmd": shlex.join(cmd), "rc": rc, "wall_s": round(time.perf_counter() - t0, 3),
           "out_path": out_path}
    if rc != 0:
        run["error"] = f"fdpp exited {rc}: {tail.strip()}"
    return run


def read_fdpp_logits(path, seqs, vocab):
    """(sum len_i, vocab) float32, checked against the expected size before it is trusted."""
    import numpy as np
    n_rows = sum(len(s) for s in seqs)
    size = os.path.getsize(path)
    want = n_rows * vocab * 4
    if size != want:
        raise ValueError(f"{path}: {size} bytes, expected {n_rows} rows x {vocab} x 4 = {want}")
    return np.fromfile(path, dtype="<f4").reshape(n_rows, vocab)


# ----------------------------------------------------------------------------------------------
# transformers side.
# ----------------------------------------------------------------------------------------------

TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def load_hf_model(path, dtype, attn, device):
    import torch
    from transformers import AutoModelForCausalLM
    tdtype = getattr(torch, TORCH_DTYPES[dtype])
    try:  # transformers 5 spells it dtype; 4.x torch_dtype
        model = AutoModelForCausalLM.from_pretrained(path, dtype=tdtype, attn_implementation=attn,
                                                     device_map=device)
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=tdtype,
                                                     attn_implementation=attn, device_map=device)
    return model.eval()


def hf_logits(model, seqs, device):
    """One full forward per sequence (no padding, so no mask subtleties): list of (len, V) float32
    CPU tensors. use_cache=False: the reference is plain causal attention over the prompt."""
    import torch
    out = []
    with torch.inference_mode():
        for s in seqs:
            ids = torch.tensor([s], dtype=torch.long, device=device)
            logits = model(input_ids=ids, use_cache=False).logits[0]
            out.append(logits.float().cpu())
    return out


def free_model(model):
    import gc
    import torch
    del model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# Comparison.
# ----------------------------------------------------------------------------------------------


def compare(cand, ref, seqs, device):
    """cand, ref: (N, V) float32 tensors (rows of all sequences). Per-position metrics."""
    import torch
    c, r = cand.to(device), ref.to(device)
    nonfinite = int((~torch.isfinite(c)).sum())
    err = (c - r).norm(dim=-1)
    rel = torch.nan_to_num(err / r.norm(dim=-1), nan=float("inf"))
    ca, ra = c.argmax(-1), r.argmax(-1)
    same = ca == ra
    # A flip between two logits closer than the position's own max abs error is rounding, not a
    # wrong result: reported beside the strict number to tell the two apart.
    gap = r.max(-1).values - r.gather(-1, ca[:, None])[:, 0]
    tie = same | (gap <= (c - r).abs().max(-1).values)
    worst = int(rel.argmax())
    seq_i, pos = 0, worst
    while pos >= len(seqs[seq_i]):
        pos -= len(seqs[seq_i])
        seq_i += 1
    return {
        "positions": int(rel.numel()),
        "max_rel_l2": float(rel.max()),
        "mean_rel_l2": float(rel.mean()),
        "worst_seq": seq_i,
        "worst_pos": pos,
        "argmax_match": float(same.float().mean()),
        "argmax_match_or_tie": float(tie.float().mean()),
        "nonfinite": nonfinite,
    }


def judge(metrics, args):
    reasons = []
    if metrics["nonfinite"]:
        reasons.append(f"{metrics['nonfinite']} NaN/Inf logits")
    if not metrics["max_rel_l2"] <= args.max_rel_l2:
        reasons.append(f"rel L2 {metrics['max_rel_l2']:.3g} > {args.max_rel_l2:g} "
                       f"(seq {metrics['worst_seq']}, pos {metrics['worst_pos']})")
    if metrics["argmax_match"] < args.min_argmax:
        reasons.append(f"same argmax {metrics['argmax_match']:.2%} < {args.min_argmax:.0%}")
    return reasons


# ----------------------------------------------------------------------------------------------
# Reporting.
# ----------------------------------------------------------------------------------------------


def markdown(rows):
    lines = ["| mode | batch | length | max rel L2 | mean rel L2 | same argmax | argmax or tie "
             "| fdpp s | result |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "max_rel_l2" in r:
            cols = [f"{r['max_rel_l2']:.2e}", f"{r['mean_rel_l2']:.2e}",
                    f"{r['argmax_match']:.2%}", f"{r['argmax_match_or_tie']:.2%}"]
        else:
            cols = ["-"] * 4
        wall = r.get("fdpp", {}).get("wall_s")
        result = r["result"] + (f": {'; '.join(r['reasons'])}" if r.get("reasons") else "")
        lines.append(f"| {r['mode']} | {r['batch']} | {r['length']} | " + " | ".join(cols) +
                     f" | {wall if wall is not None else '-'} | {result[:160]} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------


def main(argv=None):
    args = parse_args(argv)
    cfg = read_config(args.model)
    vocab = vocab_size(cfg)
    hf_dir = resolve_hf_model(args, cfg)
    hf_vocab = vocab_size(read_config(hf_dir))
    if hf_vocab != vocab:
        raise SystemExit(f"error: vocab {vocab} ({args.model}) != {hf_vocab} ({hf_dir})")
    if not (os.path.isfile(args.fdpp) and os.access(args.fdpp, os.X_OK)):
        raise SystemExit(f"error: {args.fdpp} is not an executable file")
    cases = plan_cases(args)
    prompts = {(b, L): make_prompts(args.seed, b, L, vocab, args.ragged)
               for b in args.batch for L in args.lengths}

    tmp = None
    workdir = args.workdir
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="hf_compare_")
        workdir = tmp.name

    # 1. fdpp first, with the GPU to itself.
    rows = []
    for mode, b, L in cases:
        run = run_fdpp(args, mode, prompts[(b, L)], workdir, f"b{b}_l{L}")
        status = "ok" if "error" not in run else "FAILED"
        print(f"fdpp {mode:<7} b{b} L{L}: {status} in {run['wall_s']} s", flush=True)
        rows.append({"mode": mode, "batch": b, "length": L,
                     "seq_lengths": [len(s) for s in prompts[(b, L)]], "fdpp": run})

    # 2. transformers reference, one forward per sequence, shared by both modes.
    import torch
    needed = sorted({(r["batch"], r["length"]) for r in rows if "error" not in r["fdpp"]})
    ref, hf_error = {}, None
    if needed:
        t0 = time.perf_counter()
        try:
            model = load_hf_model(hf_dir, args.hf_dtype, args.attn, args.device)
            print(f"transformers {type(model).__name__} ({args.hf_dtype}, {args.attn}) loaded in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            for key in needed:
                ref[key] = torch.cat(hf_logits(model, prompts[key], args.device))
            free_model(model)
        except Exception as e:  # keep the fdpp results and say why there is no reference
            hf_error = f"transformers reference failed: {type(e).__name__}: {e}"
            print(hf_error, flush=True)

    # 3. compare.
    for r in rows:
        key = (r["batch"], r["length"])
        if "error" in r["fdpp"]:
            r.update(result="FAIL", reasons=[r["fdpp"]["error"][:500]])
            continue
        if key not in ref:
            r.update(result="FAIL", reasons=[hf_error or "no transformers reference"])
            continue
        try:
            cand = torch.from_numpy(read_fdpp_logits(r["fdpp"]["out_path"], prompts[key], vocab))
        except (OSError, ValueError) as e:
            r.update(result="FAIL", reasons=[str(e)])
            continue
        r.update(compare(cand, ref[key], prompts[key], args.device))
        r["reasons"] = judge(r, args)
        r["result"] = "FAIL" if r["reasons"] else "pass"

    # 4. optional noise floor: a second correct implementation against the same reference.
    noise_rows = []
    if args.noise_floor and ref:
        other = "sdpa" if args.attn == "eager" else "eager"
        model = load_hf_model(hf_dir, args.dtype, other, args.device)
        for key in sorted(ref):
            cand = torch.cat(hf_logits(model, prompts[key], args.device))
            m = compare(cand, ref[key], prompts[key], args.device)
            noise_rows.append({"mode": f"hf-{other}-{args.dtype}", "batch": key[0],
                               "length": key[1], "result": "info", **m})
        free_model(model)

    passed = bool(rows) and all(r["result"] == "pass" for r in rows)
    report = {
        "model": os.path.abspath(args.model), "hf_model": os.path.abspath(hf_dir),
        "fdpp": os.path.abspath(args.fdpp), "dtype": args.dtype, "hf_dtype": args.hf_dtype,
        "attn": args.attn, "seed": args.seed, "ragged": args.ragged, "vocab": vocab,
        "thresholds": {"max_rel_l2": args.max_rel_l2, "min_argmax": args.min_argmax},
        "env": common.environment(smi=False), "passed": passed, "results": rows, "noise_floor": noise_rows,
    }
    common.write_json(args.out, report)
    print()
    print(f"fdpp vs transformers ({os.path.basename(os.path.normpath(args.model))}, {args.dtype}; "
          f"pass: rel L2 <= {args.max_rel_l2:g} everywhere, same argmax >= {args.min_argmax:.0%})")
    print(markdown(rows + noise_rows))
    print(f"\n{'PASS' if passed else 'FAIL'}; wrote {args.out}"
          + (f"; files kept in {workdir}" if args.workdir else ""))
    if tmp:
        tmp.cleanup()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
