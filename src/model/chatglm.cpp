#include "model/chatglm.h"

namespace fdpp {

// THUDM modeling_chatglm.py (GLMBlock, eval, apply_residual_connection_post_layernorm
// false), equivalently transformers' GlmForCausalLM:
//   x += dense(attn(rope(qkv(RMS1(x)) + b_qkv)));  x += 4h_to_h(swiglu(h_to_4h(RMS2(x))))
//   logits = output_layer(final_RMS(x))
// The same dataflow as Llama with a QKV bias: what differs is in the config (half-dim
// interleaved RoPE, MQA) and the weight names (weight_specs.cpp).
Status ChatGlmModel::forward(const ForwardPass& pass) {
  FDPP_RETURN_IF_ERROR(check_pass(pass));
  Backend& be = backend_;
  const ModelWeights& W = weights_;
  const int T = pass.n_tokens;
  const bool prefill = pass.kind == ForwardPass::Kind::kPrefill;
  const float eps = cfg_.norm_eps;

  const Tensor x = x_.rows(0, T);              // (T, hidden): residual stream
  const Tensor h = h_.rows(0, T);              // (T, hidden)
  const Tensor qkv = qkv_.rows(0, T);          // (T, (n_heads + 2*n_kv_heads)*head_dim)
  const Tensor q = q_.rows(0, T);              // (T, n_heads, head_dim)
  const Tensor attn = attn_.rows(0, T);        // (T, n_heads, head_dim)
  const Tensor attn_flat = attn.view({T, static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim});
  const Tensor gate_up = gate_up_.rows(0, T);  // (T, 2*ffn_hidden)
  const Tensor act = act_.rows(0, T);          // (T, ffn_hidden)

  FDPP_RETURN_IF_ERROR(be.embed(ids_.rows(0, T), W.embed, x));
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = W.layers[l];
    FDPP_RETURN_IF_ERROR(be.rmsnorm(x, L.attn_norm, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(h, L.qkv, qkv, {.bias = L.qkv_bias}));
    FDPP_RETURN_IF_ERROR(rope_append_attend(pass, l, qkv, q, attn));
    FDPP_RETURN_IF_ERROR(be.linear(attn_flat, L.o, x, {.accumulate = true, .bias = L.o_bias}));

    FDPP_RETURN_IF_ERROR(be.rmsnorm(x, L.ffn_norm, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(h, L.gate_up, gate_up, {.bias = L.gate_up_bias}));
    FDPP_RETURN_IF_ERROR(be.silu_mul(gate_up, act));  // silu(chunk 0) · chunk 1
    FDPP_RETURN_IF_ERROR(be.linear(act, L.down, x, {.accumulate = true, .bias = L.down_bias}));
  }

  const int first = (prefill && !pass.all_logits) ? T - 1 : 0;
  const int rows = T - first;
  Tensor cur = x.rows(first, T);  // (rows, hidden)
  if (cfg_.final_norm) {
    FDPP_RETURN_IF_ERROR(be.rmsnorm(cur, W.final_norm, eps, h.rows(0, rows)));
    cur = h.rows(0, rows);
  }
  FDPP_RETURN_IF_ERROR(be.linear(cur, W.lm_head, logits_.rows(0, rows), {}));
  return be.argmax(logits_.rows(0, rows), next_ids_.rows(0, rows));
}

}  // namespace fdpp
