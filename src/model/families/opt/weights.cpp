#include "model/families/opt/family.h"

#include <string>

#include <fmt/format.h>

namespace fdpp {

// Hugging Face OPTForCausalLM. Checkpoints spell the decoder "model.decoder." (saved from
// OPTForCausalLM) or "decoder." (the original facebook/opt-* files, saved from OPTModel).
std::vector<WeightSpec> opt_weight_specs(const ModelConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t E = c.token_dim(), P = c.max_position_embeddings;
  auto dec = [](const std::string& name) -> std::vector<std::string> {
    return {"model.decoder." + name, "decoder." + name};
  };
  SpecList s;
  s.one("embed", dec("embed_tokens.weight"), {V, E});
  // OPTLearnedPositionalEmbedding looks position p up at row p + 2 (a fairseq legacy: rows
  // 0 and 1 belonged to padding); dropping them here makes row p position p.
  s.add("pos_embed", {P, H}, {{dec("embed_positions.weight"), {P + 2, H}, 2}});
  if (c.has_projections()) {
    s.one("project_in", dec("project_in.weight"), {H, E});
    s.one("project_out", dec("project_out.weight"), {E, H});
  }
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l), &L = p;
    s.one(L + "attn_norm", dec(p + "self_attn_layer_norm.weight"), {H});
    s.one(L + "attn_norm_bias", dec(p + "self_attn_layer_norm.bias"), {H});
    s.add(L + "qkv", {3 * H, H},
          {{dec(p + "self_attn.q_proj.weight"), {H, H}},
           {dec(p + "self_attn.k_proj.weight"), {H, H}},
           {dec(p + "self_attn.v_proj.weight"), {H, H}}});
    if (c.attention_bias)
      s.add(L + "qkv_bias", {3 * H},
            {{dec(p + "self_attn.q_proj.bias"), {H}},
             {dec(p + "self_attn.k_proj.bias"), {H}},
             {dec(p + "self_attn.v_proj.bias"), {H}}});
    s.one(L + "o", dec(p + "self_attn.out_proj.weight"), {H, H});
    if (c.o_bias) s.one(L + "o_bias", dec(p + "self_attn.out_proj.bias"), {H});
    s.one(L + "ffn_norm", dec(p + "final_layer_norm.weight"), {H});
    s.one(L + "ffn_norm_bias", dec(p + "final_layer_norm.bias"), {H});
    s.one(L + "up", dec(p + "fc1.weight"), {F, H});
    if (c.mlp_bias) s.one(L + "up_bias", dec(p + "fc1.bias"), {F});
    s.one(L + "down", dec(p + "fc2.weight"), {H, F});
    if (c.mlp_bias) s.one(L + "down_bias", dec(p + "fc2.bias"), {H});
  }
  if (c.final_norm) {
    s.one("final_norm", dec("final_layer_norm.weight"), {H});
    s.one("final_norm_bias", dec("final_layer_norm.bias"), {H});
  }
  if (!c.tie_word_embeddings) s.one("lm_head", {"lm_head.weight"}, {V, E});
  return std::move(s.out);
}

}  // namespace fdpp
