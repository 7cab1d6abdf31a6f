#include "model/families/llama/family.h"

#include <string>

#include <fmt/format.h>

namespace fdpp {

// Hugging Face LlamaForCausalLM (model.layers.N.self_attn.q_proj ...).
std::vector<WeightSpec> llama_weight_specs(const ModelConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  SpecList s;
  s.one("embed", {"model.embed_tokens.weight"}, {V, H});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l), L = fmt::format("layers.{}.", l);
    s.one(L + "attn_norm", {p + "input_layernorm.weight"}, {H});
    s.add(L + "qkv", {c.qkv_dim(), H},
          {{{p + "self_attn.q_proj.weight"}, {q, H}},
           {{p + "self_attn.k_proj.weight"}, {kv, H}},
           {{p + "self_attn.v_proj.weight"}, {kv, H}}});
    if (c.attention_bias)
      s.add(L + "qkv_bias", {c.qkv_dim()},
            {{{p + "self_attn.q_proj.bias"}, {q}},
             {{p + "self_attn.k_proj.bias"}, {kv}},
             {{p + "self_attn.v_proj.bias"}, {kv}}});
    s.one(L + "o", {p + "self_attn.o_proj.weight"}, {H, q});
    if (c.o_bias) s.one(L + "o_bias", {p + "self_attn.o_proj.bias"}, {H});
    s.one(L + "ffn_norm", {p + "post_attention_layernorm.weight"}, {H});
    s.add(L + "gate_up", {2 * F, H},
          {{{p + "mlp.gate_proj.weight"}, {F, H}}, {{p + "mlp.up_proj.weight"}, {F, H}}});
    if (c.mlp_bias)
      s.add(L + "gate_up_bias", {2 * F},
            {{{p + "mlp.gate_proj.bias"}, {F}}, {{p + "mlp.up_proj.bias"}, {F}}});
    s.one(L + "down", {p + "mlp.down_proj.weight"}, {H, F});
    if (c.mlp_bias) s.one(L + "down_bias", {p + "mlp.down_proj.bias"}, {H});
  }
  s.one("final_norm", {"model.norm.weight"}, {H});
  if (!c.tie_word_embeddings) s.one("lm_head", {"lm_head.weight"}, {V, H});
  return std::move(s.out);
}

}  // namespace fdpp
