#include "model/families/llama/llama_model.h"

namespace fdpp {

Status LlamaModel::forward(const ForwardPass& pass) {
  Backend& be = backend_;
  FDPP_RETURN_IF_ERROR(check_pass(pass));
  const int T = pass.n_tokens;
  const bool prefill = pass.kind == ForwardPass::Kind::kPrefill;
  const float eps = cfg_.norm_eps;

  const Tensor x = x_.rows(0, T);              // (T, hidden): residual stream
  const Tensor h = h_.rows(0, T);              // (T, hidden)
  const Tensor qkv = qkv_.rows(0, T);          // (T, qkv_dim)
  const Tensor q = q_.rows(0, T);              // (T, n_heads, head_dim)
  const Tensor attn = attn_.rows(0, T);        // (T, n_heads, head_dim)
  const Tensor attn_flat = attn.view({T, static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim});
  const Tensor gate_up = gate_up_.rows(0, T);  // (T, 2*intermediate)
  const Tensor act = act_.rows(0, T);          // (T, intermediate)

  FDPP_RETURN_IF_ERROR(be.embed(ids(T), weights_.embed, x));
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = weights_.layers[l];
    // The norms and the SiLU gate are prologues of the GEMM after them: the CUDA GEMV
    // applies them while it loads x (decode), other paths run them into h / act first.
    FDPP_RETURN_IF_ERROR(be.fused_linear(x, LinearPrologue::rms_norm(L.attn_norm, eps, h), L.qkv,
                                         qkv, {.bias = L.qkv_bias}));

    FDPP_RETURN_IF_ERROR(rope_append_attend(pass, l, qkv, q, attn));
    FDPP_RETURN_IF_ERROR(be.linear(attn_flat, L.o, x, {.accumulate = true, .bias = L.o_bias}));

    FDPP_RETURN_IF_ERROR(be.fused_linear(x, LinearPrologue::rms_norm(L.ffn_norm, eps, h),
                                         L.gate_up, gate_up, {.bias = L.gate_up_bias}));
    FDPP_RETURN_IF_ERROR(be.fused_linear(gate_up, LinearPrologue::silu_mul(act), L.down, x,
                                         {.accumulate = true, .bias = L.down_bias}));
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head:
  // for a prompt that is the last token, which skips a (T, vocab) GEMM.
  const int first = (prefill && !pass.all_logits) ? T - 1 : 0;
  const int rows = T - first;
  // Llama always has the final norm; ChatGLM2 unless post_layer_norm is false.
  const LinearPrologue final_norm = cfg_.final_norm
                                        ? LinearPrologue::rms_norm(weights_.final_norm, eps,
                                                                   h.rows(0, rows))
                                        : LinearPrologue{};
  FDPP_RETURN_IF_ERROR(
      be.fused_linear(x.rows(first, T), final_norm, weights_.lm_head, logits_.rows(0, rows), {}));
  return be.argmax(logits_.rows(0, rows), next_ids_.rows(0, rows));
}

}  // namespace fdpp
