#include "model/weight_specs.h"

#include <fmt/format.h>

namespace fdpp {
namespace {

class SpecList {
 public:
  // A weight filled by several tensors, their rows stacked in order.
  void add(std::string name, Shape shape, std::vector<WeightSource> sources) {
    out.push_back({std::move(name), shape, std::move(sources)});
  }
  // A weight that is one checkpoint tensor of the same shape (any of `names`).
  void one(std::string name, std::vector<std::string> names, Shape shape) {
    add(std::move(name), shape, {{std::move(names), shape}});
  }
  std::vector<WeightSpec> out;
};

// Hugging Face LlamaForCausalLM (model.layers.N.self_attn.q_proj ...).
std::vector<WeightSpec> llama_specs(const ModelConfig& c) {
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

// Hugging Face OPTForCausalLM. Checkpoints spell the decoder "model.decoder." (saved from
// OPTForCausalLM) or "decoder." (the original facebook/opt-* files, saved from OPTModel).
std::vector<WeightSpec> opt_specs(const ModelConfig& c) {
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

// THUDM ChatGLM2/3 (transformer.encoder.layers.N.self_attention.query_key_value ...).
// query_key_value is already fused in fdpp's order (q heads | k groups | v groups, as its
// forward splits it), and dense_h_to_4h is gate | up (its swiglu: chunk(2), silu(x0) · x1).
// transformer.rotary_pos_emb.inv_freq is recomputed from the config, so it is not read.
std::vector<WeightSpec> chatglm_specs(const ModelConfig& c) {
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

}  // namespace

std::vector<WeightSpec> weight_specs(const ModelConfig& cfg) {
  switch (cfg.arch) {
    case Architecture::kLlama: return llama_specs(cfg);
    case Architecture::kOpt: return opt_specs(cfg);
    case Architecture::kChatGlm: return chatglm_specs(cfg);
  }
  return {};
}

}  // namespace fdpp
