"""ChatGLM2-6B's two namings: the THUDM tensors mapped onto transformers' GlmForCausalLM (names,
the split of the fused QKV, GlmConfig), and an fp32 ChatGLM2 forward on the native tensors that
--check compares GlmForCausalLM against. torch and safetensors only inside the reference forward."""
import math
import os

from model_configs import TORCH_DTYPE_NAME, chatglm_dims

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
