#include "model/llama.h"

#include <cmath>

#include <fmt/format.h>

namespace fdpp {

Status LlamaModel::forward(const ForwardPass& pass) {
  Backend& be = backend_;
  const int T = pass.n_tokens;
  const bool prefill = pass.kind == ForwardPass::Kind::kPrefill;
  if (T < 1 || T > limits_.max_tokens || (!prefill && T > limits_.max_batch))
    return InvalidArgument(fmt::format("forward: {} tokens exceed the limits (max_tokens {}, max_batch {})",
                                       T, limits_.max_tokens, limits_.max_batch));
  if (prefill && (pass.start_pos < 0 || pass.start_pos + T > limits_.context))
    return OutOfRange(fmt::format("forward: positions {}..{} exceed the context of {}", pass.start_pos,
                                  pass.start_pos + T - 1, limits_.context));
  const float eps = cfg_.norm_eps;
  const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));

  const Tensor x = x_.rows(0, T);              // (T, hidden): residual stream
  const Tensor h = h_.rows(0, T);              // (T, hidden)
  const Tensor qkv = qkv_.rows(0, T);          // (T, qkv_dim)
  const Tensor q = q_.rows(0, T);              // (T, n_heads, head_dim)
  const Tensor attn = attn_.rows(0, T);        // (T, n_heads, head_dim)
  const Tensor attn_flat = attn.view({T, static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim});
  const Tensor gate_up = gate_up_.rows(0, T);  // (T, 2*intermediate)
  const Tensor act = act_.rows(0, T);          // (T, intermediate)

  FDPP_RETURN_IF_ERROR(be.embed(ids_.rows(0, T), weights_.embed, x));
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = weights_.layers[l];
    FDPP_RETURN_IF_ERROR(be.rmsnorm(x, L.attn_norm, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(h, L.qkv, qkv, {.bias = L.qkv_bias}));

    RopeAppendArgs rope;
    rope.qkv = qkv;
    rope.positions = positions_.rows(0, T);
    rope.slots = slots_.rows(0, T);
    rope.inv_freq = inv_freq_;
    rope.rotary_dim = cfg_.rotary_dim();
    rope.interleaved = cfg_.rope.interleaved;
    rope.cache = &cache_;
    rope.layer = l;
    rope.q_out = q;
    FDPP_RETURN_IF_ERROR(be.rope_and_append_kv(rope));

    if (prefill) {
      AttentionPrefillArgs a;
      a.q = q;
      a.cache = &cache_;
      a.layer = l;
      a.slot = pass.slot;
      a.start_pos = pass.start_pos;
      a.scale = scale;
      a.out = attn;
      a.softmax = softmax_.args(l, /*decode=*/false);
      a.stats = softmax_.stats_args(l, T);
      // Prefill never runs inside a graph: its rows are counted here (decode: by the engine).
      if (l == 0) softmax_.count_rows(/*decode=*/false, int64_t{T} * cfg_.num_heads);
      FDPP_RETURN_IF_ERROR(be.attention_prefill(a));
    } else {
      AttentionDecodeArgs a;
      a.q = q;
      a.cache = &cache_;
      a.layer = l;
      a.slots = slots_.rows(0, T);
      a.lengths = lengths_.rows(0, T);
      a.max_length = pass.max_length;
      a.scale = scale;
      a.out = attn;
      a.softmax = softmax_.args(l, /*decode=*/true);
      FDPP_RETURN_IF_ERROR(be.attention_decode(a));
    }
    FDPP_RETURN_IF_ERROR(be.linear(attn_flat, L.o, x, {.accumulate = true, .bias = L.o_bias}));

    FDPP_RETURN_IF_ERROR(be.rmsnorm(x, L.ffn_norm, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(h, L.gate_up, gate_up, {.bias = L.gate_up_bias}));
    FDPP_RETURN_IF_ERROR(be.silu_mul(gate_up, act));
    FDPP_RETURN_IF_ERROR(be.linear(act, L.down, x, {.accumulate = true, .bias = L.down_bias}));
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head:
  // for a prompt that is the last token, which skips a (T, vocab) GEMM.
  const int first = (prefill && !pass.all_logits) ? T - 1 : 0;
  const int rows = T - first;
  FDPP_RETURN_IF_ERROR(be.rmsnorm(x.rows(first, T), weights_.final_norm, eps, h.rows(0, rows)));
  FDPP_RETURN_IF_ERROR(be.linear(h.rows(0, rows), weights_.lm_head, logits_.rows(0, rows), {}));
  return be.argmax(logits_.rows(0, rows), next_ids_.rows(0, rows));
}

}  // namespace fdpp
