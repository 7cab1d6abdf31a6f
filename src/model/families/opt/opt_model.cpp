#include "model/families/opt/opt_model.h"

namespace fdpp {

// transformers' OPTDecoder / OPTDecoderLayer, eval mode:
//   x = project_in(embed_tokens(ids)) + embed_positions(pos + 2)
//   pre-norm:  x += out_proj(attn(LN1(x)));  x += fc2(relu(fc1(LN2(x))))
//   post-norm: x = LN1(x + out_proj(attn(x)));  x = LN2(x + fc2(relu(fc1(x))))
//   logits = lm_head(project_out(final_LN(x)))      (final_LN: pre-norm models only)
// Every residual add is the accumulate epilogue of the GEMM before it (bias included),
// so a post-norm block normalises the residual stream in place.
Status OptModel::forward(const ForwardPass& pass) {
  FDPP_RETURN_IF_ERROR(check_pass(pass));
  Backend& be = backend_;
  const ModelWeights& W = weights_;
  const int T = pass.n_tokens;
  const bool prefill = pass.kind == ForwardPass::Kind::kPrefill;
  const float eps = cfg_.norm_eps;
  const bool pre = cfg_.norm_before;
  const Activation act_kind = cfg_.hidden_act == "gelu" ? Activation::kGelu : Activation::kRelu;
  const DType dt = be.activation_dtype();
  const int64_t E = cfg_.token_dim();

  const Tensor x = x_.rows(0, T);        // (T, hidden): residual stream
  const Tensor h = h_.rows(0, T);        // (T, hidden)
  const Tensor qkv = qkv_.rows(0, T);    // (T, 3*hidden)
  const Tensor q = q_.rows(0, T);        // (T, n_heads, head_dim)
  const Tensor attn = attn_.rows(0, T);  // (T, n_heads, head_dim)
  const Tensor attn_flat = attn.view({T, static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim});
  const Tensor act = act_.rows(0, T);    // (T, ffn_dim)

  if (cfg_.has_projections()) {
    // The narrow token embedding lives in h's memory until project_in widens it (E < hidden).
    const Tensor e(h.data, dt, be.device(), {T, E});  // (T, E)
    FDPP_RETURN_IF_ERROR(be.embed(ids(T), W.embed, e));
    FDPP_RETURN_IF_ERROR(be.linear(e, W.project_in, x, {}));
  } else {
    FDPP_RETURN_IF_ERROR(be.embed(ids(T), W.embed, x));
  }
  FDPP_RETURN_IF_ERROR(be.embed_add(positions(T), W.pos_embed, x));

  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = W.layers[l];
    if (pre) FDPP_RETURN_IF_ERROR(be.layernorm(x, L.attn_norm, L.attn_norm_bias, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(pre ? h : x, L.qkv, qkv, {.bias = L.qkv_bias}));
    FDPP_RETURN_IF_ERROR(rope_append_attend(pass, l, qkv, q, attn));
    // x += attn · Woᵀ + bo
    FDPP_RETURN_IF_ERROR(be.linear(attn_flat, L.o, x, {.accumulate = true, .bias = L.o_bias}));
    if (!pre) FDPP_RETURN_IF_ERROR(be.layernorm(x, L.attn_norm, L.attn_norm_bias, eps, x));

    if (pre) FDPP_RETURN_IF_ERROR(be.layernorm(x, L.ffn_norm, L.ffn_norm_bias, eps, h));
    FDPP_RETURN_IF_ERROR(be.linear(pre ? h : x, L.up, act, {.bias = L.up_bias}));
    FDPP_RETURN_IF_ERROR(be.activation(act, act, act_kind));
    // x += act · W2ᵀ + b2
    FDPP_RETURN_IF_ERROR(be.linear(act, L.down, x, {.accumulate = true, .bias = L.down_bias}));
    if (!pre) FDPP_RETURN_IF_ERROR(be.layernorm(x, L.ffn_norm, L.ffn_norm_bias, eps, x));
  }

  // Only the rows whose logits are wanted go on: for a prompt, the last token.
  const int first = (prefill && !pass.all_logits) ? T - 1 : 0;
  const int rows = T - first;
  Tensor cur = x.rows(first, T);  // (rows, hidden)
  if (cfg_.final_norm) {
    FDPP_RETURN_IF_ERROR(be.layernorm(cur, W.final_norm, W.final_norm_bias, eps, h.rows(0, rows)));
    cur = h.rows(0, rows);
  }
  if (cfg_.has_projections()) {
    // attn is free again; its first rows·E elements hold the narrowed rows.
    const Tensor narrow(attn.data, dt, be.device(), {rows, E});  // (rows, E)
    FDPP_RETURN_IF_ERROR(be.linear(cur, W.project_out, narrow, {}));
    cur = narrow;
  }
  FDPP_RETURN_IF_ERROR(be.linear(cur, W.lm_head, logits_.rows(0, rows), {}));
  return be.argmax(logits_.rows(0, rows), next_ids_.rows(0, rows));
}

}  // namespace fdpp
