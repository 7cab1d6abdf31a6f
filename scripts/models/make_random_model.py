#!/usr/bin/env python3
"""Write a Hugging Face model folder with the exact config of a known model and random weights.

    python3 scripts/models/make_random_model.py llama-2-7b /tmp/models/llama-2-7b
    python3 scripts/models/make_random_model.py llama-2-7b /tmp/models/llama-2-7b-l2 --layers 2
    python3 scripts/models/make_random_model.py chatglm2-6b /tmp/models/chatglm2-6b --chatglm-naming both
    python3 scripts/models/make_random_model.py --list

Weights are normal(0, 0.02), norm weights 1, LayerNorm biases 0, other biases normal(0, 0.02).
Every tensor is drawn on the GPU from a generator seeded by (--seed, the tensor's name), so a
tensor's values do not depend on the layer count or on the shard it lands in: a --layers 2 model
has exactly the first two layers of the full one, and both ChatGLM2 namings hold the same numbers.

The files are written the way transformers' save_pretrained writes them: safetensors shards of at
most --max-shard-gb (5 GB, decimal, like HF's "5GB"), named model-0000i-of-0000n.safetensors, with
model.safetensors.index.json; a single model.safetensors when everything fits in one shard. Each
shard's header is written first and every tensor is then streamed GPU -> pinned buffer -> file, so
host memory stays at one tensor and a 7B model takes seconds, not the minutes per-tensor CPU randn
plus safetensors.save_file of a whole state dict would.

Only the standard library is needed for --help and --list; torch (and numpy) are imported when
tensors are made, transformers only by --check.
"""
import argparse
import json
import os
import struct
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402

# The configs and tensor lists, and ChatGLM2's second naming, live beside this file (its folder
# is sys.path[0] when it runs as a script).
from chatglm_naming import (chatglm2_reference_logits, glm_config, glm_parts,  # noqa: E402
                            glm_tensor_list)
from model_configs import (MODELS, SAFETENSORS_DTYPE, STD, TENSORS,  # noqa: E402
                           generation_config, make_config, numel)

GB = 1000 ** 3  # HF's "5GB" max_shard_size is decimal


# ----------------------------------------------------------------------------------------------
# Sharded safetensors writer (header first, then tensors streamed into place).
# ----------------------------------------------------------------------------------------------

def plan_shards(specs, elem_bytes, max_shard_bytes):
    """Split the tensor list like save_pretrained: start a new shard when the next tensor would
    overflow the current one (a tensor larger than the limit gets a shard of its own)."""
    shards, cur, cur_bytes = [], [], 0
    for name, shape, _ in specs:
        nbytes = numel(shape) * elem_bytes
        if cur and cur_bytes + nbytes > max_shard_bytes:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append((name, tuple(shape), nbytes))
        cur_bytes += nbytes
    if cur:
        shards.append(cur)
    return shards


class ShardedWriter:
    """One model folder's safetensors files. All headers are laid out up front, so tensors can
    arrive in any order and each is written straight to its final offset."""

    def __init__(self, outdir, specs, dtype, max_shard_bytes):
        self.outdir = outdir
        self.st_dtype = SAFETENSORS_DTYPE[dtype]
        elem = 2  # fp16 and bf16
        shards = plan_shards(specs, elem, max_shard_bytes)
        n = len(shards)
        self.files = []  # [filename, data_start, total_bytes]
        self.where = {}  # name -> (file index, absolute offset, nbytes, shape)
        for si, shard in enumerate(shards):
            fname = "model.safetensors" if n == 1 else f"model-{si + 1:05d}-of-{n:05d}.safetensors"
            header, off = {"__metadata__": {"format": "pt"}}, 0
            for name, shape, nbytes in shard:
                header[name] = {"dtype": self.st_dtype, "shape": list(shape),
                                "data_offsets": [off, off + nbytes]}
                off += nbytes
            hbytes = json.dumps(header, separators=(",", ":")).encode()
            # Pad the header with spaces so the data starts 8-byte aligned (as safetensors does).
            hbytes += b" " * (-(8 + len(hbytes)) % 8)
            data_start = 8 + len(hbytes)
            self.files.append([fname, data_start, data_start + off, hbytes])
            for name, shape, nbytes in shard:
                begin = header[name]["data_offsets"][0]
                self.where[name] = (si, data_start + begin, nbytes, shape)
        self.handles = []
        self.pending = set(self.where)

    def open(self):
        os.makedirs(self.outdir, exist_ok=True)
        for fname, _, total, hbytes in self.files:
            f = open(os.path.join(self.outdir, fname), "wb")
            f.write(struct.pack("<Q", len(hbytes)))
            f.write(hbytes)
            f.truncate(total)  # the final size up front; every tensor then lands in place
            self.handles.append(f)

    def write(self, name, buf):
        """buf: any C-contiguous bytes-like object (a numpy view of the pinned staging buffer)."""
        si, offset, nbytes, _ = self.where[name]
        assert memoryview(buf).nbytes == nbytes, (name, memoryview(buf).nbytes, nbytes)
        f = self.handles[si]
        f.seek(offset)
        f.write(buf)
        self.pending.discard(name)

    def close(self):
        for f in self.handles:
            f.close()
        if self.pending:
            raise RuntimeError(f"{len(self.pending)} tensors never written, e.g. "
                               f"{sorted(self.pending)[:3]}")
        if len(self.files) > 1:
            weight_map = {name: self.files[si][0] for name, (si, _, _, _) in self.where.items()}
            total = sum(nb for (_, _, nb, _) in self.where.values())
            index = {"metadata": {"total_size": total},
                     "weight_map": dict(sorted(weight_map.items()))}
            write_json(os.path.join(self.outdir, "model.safetensors.index.json"), index)

    def total_bytes(self):
        return sum(total for _, _, total, _ in self.files)


write_json = common.write_json


def read_safetensors_header(path):
    """(header dict, data_start) parsed with the standard library: the writer's own check."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)), 8 + n


# ----------------------------------------------------------------------------------------------
# Random tensors on the GPU.
# ----------------------------------------------------------------------------------------------


def tensor_seed(seed, name):
    """Per-tensor seed from (seed, name): values independent of order, shards and layer count."""
    return (seed * 1_000_003 + zlib.crc32(name.encode())) % (2 ** 63)


class TensorMaker:
    def __init__(self, device, dtype, seed):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        self.seed = seed
        self.gen = torch.Generator(device=self.device)

    def make(self, name, shape, init):
        torch = self.torch
        if init == "ones":
            return torch.ones(shape, dtype=self.dtype, device=self.device)
        if init == "zeros":
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.gen.manual_seed(tensor_seed(self.seed, name))
        t = torch.empty(shape, dtype=self.dtype, device=self.device)
        # normal_ straight into fp16/bf16: one kernel, no fp32 temporary of the whole matrix.
        return t.normal_(0.0, STD, generator=self.gen)


class Stager:
    """GPU tensor -> bytes via one reusable pinned host buffer (pinned copies run at PCIe speed,
    pageable ones at a fraction of it)."""

    def __init__(self, max_bytes, pin):
        import torch
        self.torch = torch
        self.buf = torch.empty(max_bytes, dtype=torch.uint8, pin_memory=pin)

    def bytes_of(self, t):
        raw = t.contiguous().reshape(-1).view(self.torch.uint8)
        n = raw.numel()
        host = self.buf[:n]
        host.copy_(raw)
        return host.numpy()


# ----------------------------------------------------------------------------------------------
# Writing one model (and, for ChatGLM2 "both", its Glm twin from the same tensors).
# ----------------------------------------------------------------------------------------------


MODEL_FILES = ("model.safetensors.index.json", "config.json", "generation_config.json")


def existing_model_files(path):
    if not os.path.isdir(path):
        return []
    return [f for f in os.listdir(path) if f.endswith(".safetensors") or f in MODEL_FILES]


def prepare_dir(path, force):
    """Refuse to mix a new model into an old folder (stale shards of a larger model would be
    picked up); with --force remove only the files this script writes."""
    ours = existing_model_files(path)
    if ours and not force:
        sys.exit(f"error: {path} already holds a model ({ours[0]}, ...); pass --force to "
                 "replace it")
    for f in ours:
        os.remove(os.path.join(path, f))
    os.makedirs(path, exist_ok=True)


def write_models(args):
    family, cfg = make_config(args.name, args.layers, args.vocab, args.dtype)
    specs = TENSORS[family](cfg)
    outputs = []  # (outdir, config, generation_config, specs, to_output(name, tensor) -> pieces)
    naming = args.chatglm_naming if family == "chatglm" else "native"
    if naming in ("native", "both"):
        outputs.append((args.outdir, cfg, generation_config(family, cfg), specs,
                        lambda name, t: [(name, t)]))
    if naming in ("glm", "both"):
        gdir = args.outdir + "-glm" if naming == "both" else args.outdir
        gcfg = glm_config(cfg, args.dtype)
        ggen = {"eos_token_id": cfg["eos_token_id"], "pad_token_id": cfg["pad_token_id"]}

        def to_glm(name, t):
            return [(gname, t if r0 is None else t[r0:r1]) for gname, r0, r1 in glm_parts(name, cfg)]

        outputs.append((gdir, gcfg, ggen, glm_tensor_list(specs, cfg), to_glm))

    max_shard = int(args.max_shard_gb * GB)
    writers = []
    for outdir, *_ in outputs:  # every refusal before anything is touched
        prepare_dir(outdir, args.force)
    for outdir, c, gen, out_specs, _ in outputs:
        write_json(os.path.join(outdir, "config.json"), c)
        write_json(os.path.join(outdir, "generation_config.json"), gen)
        w = ShardedWriter(outdir, out_specs, args.dtype, max_shard)
        w.open()
        writers.append(w)

    import torch
    t0 = time.perf_counter()
    maker = TensorMaker(args.device, args.dtype, args.seed)
    largest = max(numel(s) for _, s, _ in specs) * 2
    stager = Stager(largest, pin=maker.device.type == "cuda")
    for name, shape, init in specs:
        t = maker.make(name, shape, init)
        for w, (_, _, _, _, convert) in zip(writers, outputs):
            for out_name, piece in convert(name, t):
                w.write(out_name, stager.bytes_of(piece))
        del t
    for w in writers:
        w.close()
    if maker.device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    total = sum(w.total_bytes() for w in writers)
    for w, (outdir, *_rest) in zip(writers, outputs):
        print(f"wrote {outdir}: {len(w.files)} shard(s), {len(w.where)} tensors, "
              f"{w.total_bytes() / GB:.2f} GB")
    print(f"{args.name}: {total} bytes ({total / GB:.2f} GB) written in {wall:.1f} s "
          f"({total / GB / max(wall, 1e-9):.2f} GB/s), seed {args.seed}, {args.dtype}, "
          f"device {maker.device}")
    results = [(outdir, out_specs) for outdir, _, _, out_specs, _ in outputs]
    return results, family, cfg, maker


# ----------------------------------------------------------------------------------------------
# Checks.
# ----------------------------------------------------------------------------------------------


def verify_headers(outdir, specs, dtype):
    """Names, shapes, dtype and contiguous offsets of every shard, read back from disk."""
    expect = {name: list(shape) for name, shape, _ in specs}
    seen = {}
    files = sorted(f for f in os.listdir(outdir) if f.endswith(".safetensors"))
    for fname in files:
        path = os.path.join(outdir, fname)
        header, data_start = read_safetensors_header(path)
        meta = header.pop("__metadata__", {})
        assert meta.get("format") == "pt", f"{fname}: metadata format {meta}"
        end = 0
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            b, e = info["data_offsets"]
            assert b == end, f"{fname}: {name} starts at {b}, previous tensor ended at {end}"
            assert info["dtype"] == SAFETENSORS_DTYPE[dtype], (name, info["dtype"])
            assert e - b == numel(info["shape"]) * 2, name
            end = e
            seen[name] = (info["shape"], fname)
        assert os.path.getsize(path) == data_start + end, f"{fname}: size != header"
    missing = set(expect) - set(seen)
    extra = set(seen) - set(expect)
    assert not missing and not extra, f"missing {sorted(missing)[:3]}, extra {sorted(extra)[:3]}"
    for name, shape in expect.items():
        assert seen[name][0] == shape, (name, seen[name][0], shape)
    index = os.path.join(outdir, "model.safetensors.index.json")
    if len(files) > 1:
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        assert {k: v for k, v in wm.items()} == {k: v[1] for k, v in seen.items()}, "index.json"
    else:
        assert not os.path.exists(index), "stale index.json next to a single model.safetensors"
    return len(files)


def verify_values(outdir, names, expected_fn):
    """Read a few tensors back with the safetensors library and compare bit for bit."""
    import torch
    from safetensors import safe_open
    files = sorted(f for f in os.listdir(outdir) if f.endswith(".safetensors"))
    where = {}
    for fname in files:
        with safe_open(os.path.join(outdir, fname), framework="pt") as f:
            for k in f.keys():
                where[k] = fname
    for name in names:
        with safe_open(os.path.join(outdir, where[name]), framework="pt") as f:
            got = f.get_tensor(name)
        want = expected_fn(name).cpu()
        if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
            raise AssertionError(f"{outdir}: {name} differs from the regenerated tensor")


def sample_names(specs, k):
    """k tensors spread over the list, always including the first and the last."""
    if len(specs) <= k:
        return [s[0] for s in specs]
    step = (len(specs) - 1) / (k - 1)
    return [specs[round(i * step)][0] for i in range(k)]


def run_checks(results, family, cfg, maker, args):
    spec_by_name = {name: (shape, init) for name, shape, init in TENSORS[family](cfg)}
    # glm name -> (native name, rows) so a Glm tensor can be regenerated from its ChatGLM2 parent.
    glm_origin = {}
    if family == "chatglm":
        for name in spec_by_name:
            for gname, r0, r1 in glm_parts(name, cfg):
                glm_origin[gname] = (name, r0, r1)

    def expected(name):
        if name in spec_by_name:
            shape, init = spec_by_name[name]
            return maker.make(name, shape, init)
        parent, r0, r1 = glm_origin[name]
        shape, init = spec_by_name[parent]
        t = maker.make(parent, shape, init)
        return t if r0 is None else t[r0:r1]

    have_safetensors = True
    try:
        import safetensors  # noqa: F401
    except ImportError:
        have_safetensors = False
        print("note: safetensors not importable; checked headers with the standard library only")
    for outdir, specs in results:
        n = verify_headers(outdir, specs, args.dtype)
        if have_safetensors:
            verify_values(outdir, sample_names(specs, args.verify_tensors), expected)
        print(f"verified {outdir}: {n} shard(s), {len(specs)} tensors"
              + (f", {min(args.verify_tensors, len(specs))} re-read bit-exact" if have_safetensors
                 else ""))


def check_with_transformers(results, family, cfg, args):
    """--check: load each folder transformers can read, run a forward, and for ChatGLM2 'both'
    compare GlmForCausalLM with a from-the-paper ChatGLM2 forward on the native tensors."""
    import torch
    native_dir = results[0][0]
    # results: [native] or [glm] or [native, glm]; transformers reads all but native ChatGLM2.
    if family == "chatglm" and args.chatglm_naming == "native":
        print("check: transformers cannot load the native ChatGLM2 naming without remote code; "
              "use --chatglm-naming both")
        return True
    hf_dir = results[-1][0]
    ok = True
    vocab = cfg.get("vocab_size") or cfg["padded_vocab_size"]
    g = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(3, vocab, (1, args.check_tokens), generator=g)
    compute_dtype = torch.float32  # exact-enough to tell a mapping error from rounding
    model = load_hf(hf_dir, compute_dtype, args.device)
    with torch.no_grad():
        logits = model(input_ids=ids.to(args.device)).logits.float()[0]
    finite = bool(torch.isfinite(logits).all())
    print(f"check: transformers {type(model).__name__} forward on {args.check_tokens} tokens: "
          f"logits {tuple(logits.shape)}, finite={finite}, std={logits.std().item():.4f}")
    ok &= finite and logits.shape == (args.check_tokens, vocab)
    del model
    if family == "chatglm" and args.chatglm_naming == "both":
        ref = chatglm2_reference_logits(native_dir, cfg, ids[0], args.device)
        rel = ((logits - ref).norm(dim=-1) / ref.norm(dim=-1)).max().item()
        same = (logits.argmax(-1) == ref.argmax(-1)).float().mean().item()
        good = rel < 1e-3 and same == 1.0
        print(f"check: GlmForCausalLM vs ChatGLM2 reference forward (fp32): max rel L2 {rel:.2e}, "
              f"same argmax {same:.0%} -> {'OK' if good else 'MISMATCH'}")
        ok &= good
    return ok


def load_hf(path, dtype, device):
    import transformers
    from transformers import AutoModelForCausalLM
    kwargs = {"attn_implementation": "eager"}
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, device_map=device, output_loading_info=True, **kwargs)
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model, info = AutoModelForCausalLM.from_pretrained(
            path, torch_dtype=dtype, device_map=device, output_loading_info=True, **kwargs)
    bad = {k: v for k, v in info.items()
           if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    # A tied lm_head (OPT) may be reported missing by some versions; anything else is an error.
    missing = [k for k in bad.get("missing_keys", []) if k != "lm_head.weight"]
    if missing or bad.get("unexpected_keys") or bad.get("mismatched_keys"):
        raise RuntimeError(f"transformers {transformers.__version__} loading {path}: {bad}")
    return model.eval()


# ----------------------------------------------------------------------------------------------


def list_models():
    print(f"{'name':<14} {'family':<8} {'layers':>6} {'hidden':>6} {'params':>8}  notes")
    for name, (family, factory) in MODELS.items():
        cfg = factory()
        n = sum(numel(s) for _, s, _ in TENSORS[family](cfg))
        layers = cfg.get("num_hidden_layers", cfg.get("num_layers"))
        notes = {"llama": "untied, MHA", "opt": "tied, LayerNorm+bias, ReLU, learned positions",
                 "chatglm": "MQA 2 groups, qkv bias, half-dim interleaved RoPE; "
                            "--chatglm-naming native|glm|both"}[family]
        print(f"{name:<14} {family:<8} {layers:>6} {cfg['hidden_size']:>6} {n / 1e9:>7.2f}B  {notes}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Write a Hugging Face model folder with a known model's exact config and "
                    "random normal(0, 0.02) weights (norms 1), generated on the GPU.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("name", nargs="?", help="model name (see --list)")
    ap.add_argument("outdir", nargs="?", help="output folder")
    ap.add_argument("--list", action="store_true", help="print the known model names and exit")
    ap.add_argument("--layers", type=int, help="number of layers (None: the model's own)")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, help="vocabulary size (None: the model's own)")
    ap.add_argument("--chatglm-naming", choices=["native", "glm", "both"], default="native",
                    help="chatglm2-6b only: THUDM tensor names, transformers GlmForCausalLM names,"
                         " or both (OUTDIR native, OUTDIR-glm Glm, the same weights)")
    ap.add_argument("--max-shard-gb", type=float, default=5.0,
                    help="largest shard in GB (10^9 bytes), like save_pretrained's max_shard_size")
    ap.add_argument("--device", default="cuda", help="where the random tensors are drawn")
    ap.add_argument("--force", action="store_true", help="replace a model already in OUTDIR")
    ap.add_argument("--verify-tensors", type=int, default=4,
                    help="tensors per folder re-read with safetensors and compared bit for bit")
    ap.add_argument("--check", action="store_true",
                    help="also load the folder with transformers and run a forward; for ChatGLM2 "
                         "with --chatglm-naming both, compare GlmForCausalLM with a reference "
                         "ChatGLM2 forward on the native tensors (fp32, needs ~4x the fp16 size "
                         "in GPU memory)")
    ap.add_argument("--check-tokens", type=int, default=12, help="prompt length of --check")
    args = ap.parse_args(argv)
    if args.list:
        return args
    if not args.name or not args.outdir:
        ap.error("NAME and OUTDIR are required (or --list)")
    if args.name not in MODELS:
        ap.error(f"unknown model {args.name!r}; known: {', '.join(MODELS)}")
    if args.layers is not None and args.layers < 1:
        ap.error("--layers must be >= 1")
    if args.vocab is not None and args.vocab < 4:
        ap.error("--vocab must be >= 4")
    if args.chatglm_naming != "native" and MODELS[args.name][0] != "chatglm":
        ap.error("--chatglm-naming applies to chatglm2-6b only")
    if args.max_shard_gb <= 0:
        ap.error("--max-shard-gb must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        list_models()
        return 0
    results, family, cfg, maker = write_models(args)
    run_checks(results, family, cfg, maker, args)
    if args.check and not check_with_transformers(results, family, cfg, args):
        print("check FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
