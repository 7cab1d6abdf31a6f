"""The models make_random_model.py knows: each family's config.json as published, and its tensor
list (name, shape, init) in the order save_pretrained writes it. Standard library only, so
--help and --list need no torch."""
import math

STD = 0.02  # every random weight and bias: normal(0, STD)

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


def numel(shape):
    return math.prod(shape)
