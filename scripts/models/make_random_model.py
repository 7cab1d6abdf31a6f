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
import math
import os
import struct
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fdpp_scripts import common  # noqa: E402

STD = 0.02  # every random weight and bias: normal(0, STD)
GB = 1000 ** 3  # HF's "5GB" max_shard_size is decimal

# ----------------------------------------------------------------------------------------------
# Configs, as in the public config.json of each model (values that matter for the math; the
# dropout fields are kept because they are part of the real files, eval mode ignores them).
# ----------------------------------------------------------------------------------------------


def llama_config(hidden, inter, layers, heads, kv_heads):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "hidden_act": "silu",
        "max_position_embeddings": 4096,
        "initializer_range": 0.02,
        "rms_norm_eps": 1e-05,
        "pretraining_tp": 1,
        "use_cache": True,
        "vocab_size": 32000,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        # transformers < 5 reads rope_theta, transformers 5 folds it into rope_parameters;
        # both spellings agree so either version (and fdpp's parser) sees theta = 10000.
        "rope_theta": 10000.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    }


def opt_config():
    return {
        "architectures": ["OPTForCausalLM"],
        "model_type": "opt",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "ffn_dim": 16384,
        "vocab_size": 50272,
        "max_position_embeddings": 2048,
        "do_layer_norm_before": True,
        "_remove_final_layer_norm": False,
        "word_embed_proj_dim": 4096,
        "activation_function": "relu",
        "enable_bias": True,
        "layer_norm_elementwise_affine": True,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "layerdrop": 0.0,
        "init_std": 0.02,
        "use_cache": True,
        "tie_word_embeddings": True,
        "bos_token_id": 2,
        "eos_token_id": 2,
        "pad_token_id": 1,
        "prefix": "</s>",
    }


def chatglm2_config():
    # THUDM/chatglm2-6b config.json (auto_map dropped: there is no modeling code in the folder).
    return {
        "architectures": ["ChatGLMModel"],
        "model_type": "chatglm",
        "add_bias_linear": False,
        "add_qkv_bias": True,
        "apply_query_key_layer_scaling": True,
        "apply_residual_connection_post_layernorm": False,
        "attention_dropout": 0.0,
        "attention_softmax_in_fp32": True,
        "bias_dropout_fusion": True,
        "ffn_hidden_size": 13696,
        "fp32_residual_connection": False,
        "hidden_dropout": 0.0,
        "hidden_size": 4096,
        "kv_channels": 128,
        "layernorm_epsilon": 1e-05,
        "multi_query_attention": True,
        "multi_query_group_num": 2,
        "num_attention_heads": 32,
        "num_layers": 28,
        "original_rope": True,
        "padded_vocab_size": 65024,
        "post_layer_norm": True,
        "rmsnorm": True,
        "seq_length": 32768,
        "use_cache": True,
        "tie_word_embeddings": False,
        "eos_token_id": 2,
        "pad_token_id": 0,
    }


MODELS = {
    "llama-2-7b": ("llama", lambda: llama_config(4096, 11008, 32, 32, 32)),
    "llama-2-13b": ("llama", lambda: llama_config(5120, 13824, 40, 40, 40)),
    "opt-6.7b": ("opt", opt_config),
    "chatglm2-6b": ("chatglm", chatglm2_config),
}

TORCH_DTYPE_NAME = {"fp16": "float16", "bf16": "bfloat16"}
SAFETENSORS_DTYPE = {"fp16": "F16", "bf16": "BF16"}


def make_config(name, layers, vocab, dtype):
    """The model's config dict with the --layers / --vocab / --dtype overrides applied."""
    family, factory = MODELS[name]
    cfg = factory()
    layer_key = "num_layers" if family == "chatglm" else "num_hidden_layers"
    vocab_key = "padded_vocab_size" if family == "chatglm" else "vocab_size"
    if layers is not None:
        cfg[layer_key] = layers
    if vocab is not None:
        cfg[vocab_key] = vocab
    if family == "chatglm":
        cfg["torch_dtype"] = TORCH_DTYPE_NAME[dtype]  # THUDM's own files predate "dtype"
    else:
        cfg["dtype"] = TORCH_DTYPE_NAME[dtype]  # transformers 5 spelling (fdpp reads both)
    return family, cfg


def generation_config(family, cfg):
    if family == "chatglm":
        return {"eos_token_id": cfg["eos_token_id"], "pad_token_id": cfg["pad_token_id"]}
    gen = {"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]}
    if "pad_token_id" in cfg:
        gen["pad_token_id"] = cfg["pad_token_id"]
    return gen


# ----------------------------------------------------------------------------------------------
# Tensor lists: (name, shape, init) in the order save_pretrained would write them.
# init: "normal" = normal(0, STD), "ones" (norm weights), "zeros" (LayerNorm biases).
# ----------------------------------------------------------------------------------------------


def llama_tensors(c):
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", (v, h), "normal")]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (h,), "ones"),
            (p + "self_attn.q_proj.weight", (q, h), "normal"),
            (p + "self_attn.k_proj.weight", (kv, h), "normal"),
            (p + "self_attn.v_proj.weight", (kv, h), "normal"),
            (p + "self_attn.o_proj.weight", (h, q), "normal"),
            (p + "post_attention_layernorm.weight", (h,), "ones"),
            (p + "mlp.gate_proj.weight", (f, h), "normal"),
            (p + "mlp.up_proj.weight", (f, h), "normal"),
            (p + "mlp.down_proj.weight", (h, f), "normal"),
        ]
    out += [("model.norm.weight", (h,), "ones"), ("lm_head.weight", (v, h), "normal")]
    return out


def opt_tensors(c):
    h, f, v = c["hidden_size"], c["ffn_dim"], c["vocab_size"]
    assert c["word_embed_proj_dim"] == h, "project_in/project_out are not generated"
    # OPT's learned positions are offset by 2 (a fairseq legacy), hence max_pos + 2 rows.
    out = [
        ("model.decoder.embed_tokens.weight", (v, h), "normal"),
        ("model.decoder.embed_positions.weight", (c["max_position_embeddings"] + 2, h), "normal"),
    ]
    for i in range(c["num_hidden_layers"]):
        p = f"model.decoder.layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            out += [(p + f"self_attn.{proj}.weight", (h, h), "normal"),
                    (p + f"self_attn.{proj}.bias", (h,), "normal")]
        out += [
            (p + "self_attn_layer_norm.weight", (h,), "ones"),
            (p + "self_attn_layer_norm.bias", (h,), "zeros"),
            (p + "fc1.weight", (f, h), "normal"),
            (p + "fc1.bias", (f,), "normal"),
            (p + "fc2.weight", (h, f), "normal"),
            (p + "fc2.bias", (h,), "normal"),
            (p + "final_layer_norm.weight", (h,), "ones"),
            (p + "final_layer_norm.bias", (h,), "zeros"),
        ]
    out += [("model.decoder.final_layer_norm.weight", (h,), "ones"),
            ("model.decoder.final_layer_norm.bias", (h,), "zeros")]
    # No lm_head.weight: OPT ties it to embed_tokens and save_pretrained leaves it out.
    return out


def chatglm_dims(c):
    d = c["kv_channels"]
    q = c["num_attention_heads"] * d
    kv = c["multi_query_group_num"] * d
    return q, kv


def chatglm_tensors(c):
    h, f, v = c["hidden_size"], c["ffn_hidden_size"], c["padded_vocab_size"]
    q, kv = chatglm_dims(c)
    out = [("transformer.embedding.word_embeddings.weight", (v, h), "normal")]
    for i in range(c["num_layers"]):
        p = f"transformer.encoder.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (h,), "ones"),
            # rows: [q heads (32*128) | k groups (2*128) | v groups (2*128)]
            (p + "self_attention.query_key_value.weight", (q + 2 * kv, h), "normal"),
            (p + "self_attention.query_key_value.bias", (q + 2 * kv,), "normal"),
            (p + "self_attention.dense.weight", (h, q), "normal"),
            (p + "post_attention_layernorm.weight", (h,), "ones"),
            # rows: [gate (goes through SiLU) | up]
            (p + "mlp.dense_h_to_4h.weight", (2 * f, h), "normal"),
            (p + "mlp.dense_4h_to_h.weight", (h, f), "normal"),
        ]
    out += [("transformer.encoder.final_layernorm.weight", (h,), "ones"),
            ("transformer.output_layer.weight", (v, h), "normal")]
    return out


TENSORS = {"llama": llama_tensors, "opt": opt_tensors, "chatglm": chatglm_tensors}

# ----------------------------------------------------------------------------------------------
# ChatGLM2 -> transformers GlmForCausalLM ("glm" naming).
#
# transformers' convert_glm_weights_to_hf.py renames transformer. -> model., output_layer -> lm_head,
# embedding.word_embeddings -> embed_tokens, encoder.layers -> layers, final_layernorm -> norm,
# self_attention -> self_attn, dense -> o_proj, dense_h_to_4h -> gate_up_proj,
# dense_4h_to_h -> down_proj. GlmAttention has separate q/k/v_proj (with bias), so the fused
# query_key_value rows are split in ChatGLM2's own order [q | k | v] (its forward does
# mixed_x_layer.split([np*hn, ng*hn, ng*hn])). No row permutation is needed anywhere:
#   * MLP: ChatGLM2's swiglu is chunk(2) -> silu(x0) * x1; GlmMLP is chunk(2) -> up * silu(gate)
#     with gate the first half: the same rows in the same order.
#   * RoPE: ChatGLM2 rotates the first rotary_dim = kv_channels/2 = 64 dims of each head in
#     adjacent pairs (x[2i], x[2i+1]) with frequency 10000^(-2i/64), i < 32 (its apply_rotary_pos_emb
#     reshapes to (..., 32, 2)). Glm with partial_rotary_factor 0.5 computes inv_freq over
#     dim = 128*0.5 = 64 (the same 32 frequencies), repeat_interleaves cos/sin and uses the
#     rotate-every-two rotate_half (x[0::2], x[1::2]) on the first 64 dims: the identical rotation.
#     So q/k rows are NOT permuted (unlike the Llama conversion, which permutes for rotate-half).
#   * GQA: ChatGLM2 expands each of the 2 KV groups to 16 consecutive query heads; Glm's repeat_kv
#     does the same (query head h uses KV head h // 16).
# ----------------------------------------------------------------------------------------------

GLM_LAYER_RENAME = {
    "input_layernorm.weight": "input_layernorm.weight",
    "post_attention_layernorm.weight": "post_attention_layernorm.weight",
    "self_attention.dense.weight": "self_attn.o_proj.weight",
    "mlp.dense_h_to_4h.weight": "mlp.gate_up_proj.weight",
    "mlp.dense_4h_to_h.weight": "mlp.down_proj.weight",
}
GLM_TOP_RENAME = {
    "transformer.embedding.word_embeddings.weight": "model.embed_tokens.weight",
    "transformer.encoder.final_layernorm.weight": "model.norm.weight",
    "transformer.output_layer.weight": "lm_head.weight",
}


def glm_parts(name, c):
    """[(glm_name, row_begin, row_end)] for one ChatGLM2 tensor; rows None = the whole tensor."""
    if name in GLM_TOP_RENAME:
        return [(GLM_TOP_RENAME[name], None, None)]
    prefix = "transformer.encoder.layers."
    assert name.startswith(prefix), name
    idx, rest = name[len(prefix):].split(".", 1)
    p = f"model.layers.{idx}."
    if rest.startswith("self_attention.query_key_value."):
        kind = rest.rsplit(".", 1)[1]  # weight | bias
        q, kv = chatglm_dims(c)
        return [(p + f"self_attn.q_proj.{kind}", 0, q),
                (p + f"self_attn.k_proj.{kind}", q, q + kv),
                (p + f"self_attn.v_proj.{kind}", q + kv, q + 2 * kv)]
    return [(p + GLM_LAYER_RENAME[rest], None, None)]


def glm_tensor_list(native_specs, c):
    out = []
    for name, shape, init in native_specs:
        for glm_name, r0, r1 in glm_parts(name, c):
            out.append((glm_name, shape if r0 is None else (r1 - r0,) + tuple(shape[1:]), init))
    return out


def glm_config(c, dtype):
    """GlmConfig fields for the same network (cf. convert_glm_weights_to_hf.convert_config)."""
    q_heads = c["num_attention_heads"]
    kv_heads = c["multi_query_group_num"] if c["multi_query_attention"] else q_heads
    return {
        "architectures": ["GlmForCausalLM"],
        "model_type": "glm",
        "vocab_size": c["padded_vocab_size"],
        "hidden_size": c["hidden_size"],
        "intermediate_size": c["ffn_hidden_size"],
        "num_hidden_layers": c["num_layers"],
        "num_attention_heads": q_heads,
        "num_key_value_heads": kv_heads,
        "head_dim": c["kv_channels"],
        "hidden_act": "silu",
        "attention_dropout": 0.0,
        "max_position_embeddings": c["seq_length"],
        "initializer_range": 0.02,
        "rms_norm_eps": c["layernorm_epsilon"],
        "use_cache": True,
        "tie_word_embeddings": False,
        "attention_bias": c["add_qkv_bias"],
        # ChatGLM2-6B has no rope_ratio, so theta is 10000. partial_rotary_factor sits both at the
        # top level (GlmConfig.__post_init__ defaults it there) and in rope_parameters (where
        # transformers 5 standardises it); both agree.
        "partial_rotary_factor": 0.5,
        "rope_theta": 10000.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                            "partial_rotary_factor": 0.5},
        "pad_token_id": c["pad_token_id"],
        "eos_token_id": c["eos_token_id"],
        "dtype": TORCH_DTYPE_NAME[dtype],
    }


# ----------------------------------------------------------------------------------------------
# Sharded safetensors writer (header first, then tensors streamed into place).
# ----------------------------------------------------------------------------------------------


def numel(shape):
    return math.prod(shape)


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


def chatglm2_reference_logits(native_dir, c, ids, device):
    """ChatGLM2-6B's forward (THUDM modeling_chatglm.py, eval, no cache) written out in fp32 on
    the native tensors: the independent side of the naming check."""
    import torch
    from safetensors.torch import load_file
    w = {}
    for f in sorted(os.listdir(native_dir)):
        if f.endswith(".safetensors"):
            w.update(load_file(os.path.join(native_dir, f), device=str(device)))
    w = {k: v.float() for k, v in w.items()}
    nh, ng, d = c["num_attention_heads"], c["multi_query_group_num"], c["kv_channels"]
    eps = c["layernorm_epsilon"]
    T = ids.numel()
    rot = d // 2  # ChatGLM2 builds RotaryEmbedding(kv_channels // 2): rotates 64 of 128 dims
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2, device=device).float() / rot))
    ang = torch.arange(T, device=device).float()[:, None] * inv_freq[None, :]  # (T, rot/2)
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]  # (T, 1, rot/2)

    def rms(x, wt):
        return wt * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rope(x):  # (T, heads, d): adjacent pairs of the first `rot` dims
        xr = x[..., :rot].reshape(T, x.shape[1], rot // 2, 2)
        x0, x1 = xr[..., 0], xr[..., 1]
        out = torch.stack((x0 * cos - x1 * sin, x1 * cos + x0 * sin), -1).flatten(2)
        return torch.cat((out, x[..., rot:]), -1)

    x = w["transformer.embedding.word_embeddings.weight"][ids.to(device)]  # (T, H)
    mask = torch.full((T, T), float("-inf"), device=device).triu(1)
    for i in range(c["num_layers"]):
        p = f"transformer.encoder.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"])
        qkv = h @ w[p + "self_attention.query_key_value.weight"].T \
            + w[p + "self_attention.query_key_value.bias"]
        q, k, v = qkv.split([nh * d, ng * d, ng * d], dim=-1)
        q, k, v = q.view(T, nh, d), k.view(T, ng, d), v.view(T, ng, d)
        q, k = rope(q), rope(k)
        k = k.repeat_interleave(nh // ng, dim=1)  # group g serves heads g*16 .. g*16+15
        v = v.repeat_interleave(nh // ng, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(d) + mask
        o = torch.einsum("hts,shd->thd", s.softmax(-1), v).reshape(T, nh * d)
        x = x + o @ w[p + "self_attention.dense.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        a, b = (h @ w[p + "mlp.dense_h_to_4h.weight"].T).chunk(2, dim=-1)
        x = x + (torch.nn.functional.silu(a) * b) @ w[p + "mlp.dense_4h_to_h.weight"].T
    x = rms(x, w["transformer.encoder.final_layernorm.weight"])
    return x @ w["transformer.output_layer.weight"].T


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
