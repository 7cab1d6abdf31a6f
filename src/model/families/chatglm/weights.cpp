#include "model/families/chatglm/family.h"

#include <string>

#include <fmt/format.h>

namespace fdpp {

// THUDM ChatGLM2/3 (transformer.encoder.layers.N.self_attention.query_key_value ...).
// query_key_value is already fused in fdpp's order (q heads | k groups | v groups, as its
// forward splits it), and dense_h_to_4h is gate | up (its swiglu: chunk(2), silu(x0) · x1).
// transformer.rotary_pos_emb.inv_freq is recomputed from the config, so it is not read.
std::vector<WeightSpec> chatglm_weight_specs(const ModelConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim;
  SpecList s;
  s.one("embed", {"transformer.embedding.word_embeddings.weight"}, {V, H});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("transformer.encoder.layers.{}.", l),
                      L = fmt::format("layers.{}.", l);
    s.one(L + "attn_norm", {p + "input_layernorm.weight"}, {H});
    s.one(L + "qkv", {p + "self_attention.query_key_value.weight"}, {c.qkv_dim(), H});
    if (c.attention_bias)
      s.one(L + "qkv_bias", {p + "self_attention.query_key_value.bias"}, {c.qkv_dim()});
    s.one(L + "o", {p + "self_attention.dense.weight"}, {H, q});
    if (c.o_bias) s.one(L + "o_bias", {p + "self_attention.dense.bias"}, {H});
    s.one(L + "ffn_norm", {p + "post_attention_layernorm.weight"}, {H});
    s.one(L + "gate_up", {p + "mlp.dense_h_to_4h.weight"}, {2 * F, H});
    if (c.mlp_bias) s.one(L + "gate_up_bias", {p + "mlp.dense_h_to_4h.bias"}, {2 * F});
    s.one(L + "down", {p + "mlp.dense_4h_to_h.weight"}, {H, F});
    if (c.mlp_bias) s.one(L + "down_bias", {p + "mlp.dense_4h_to_h.bias"}, {H});
  }
  if (c.final_norm) s.one("final_norm", {"transformer.encoder.final_layernorm.weight"}, {H});
  if (!c.tie_word_embeddings) s.one("lm_head", {"transformer.output_layer.weight"}, {V, H});
  return std::move(s.out);
}

}  // namespace fdpp
