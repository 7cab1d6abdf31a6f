// config.json parsing, weight plans and GEMM shapes of the OPT and ChatGLM2 families
// (and Llama-2-13B), on the published configs as scripts/models/make_random_model.py writes them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/config.h"
#include "model/gemm_shapes.h"
#include "model/weight_specs.h"
#include "model/weights.h"

namespace fdpp {
namespace {

const char* kOpt67b = R"({
  "architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 4096,
  "num_hidden_layers": 32, "num_attention_heads": 32, "ffn_dim": 16384, "vocab_size": 50272,
  "max_position_embeddings": 2048, "do_layer_norm_before": true, "_remove_final_layer_norm": false,
  "word_embed_proj_dim": 4096, "activation_function": "relu", "enable_bias": true,
  "layer_norm_elementwise_affine": true, "dropout": 0.1, "tie_word_embeddings": true,
  "bos_token_id": 2, "eos_token_id": 2, "pad_token_id": 1, "prefix": "</s>", "dtype": "float16"})";

// facebook/opt-350m: post-norm, narrower embedding with project_in / project_out.
const char* kOpt350m = R"({
  "model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
  "ffn_dim": 4096, "vocab_size": 50272, "max_position_embeddings": 2048,
  "do_layer_norm_before": false, "word_embed_proj_dim": 512, "activation_function": "relu",
  "bos_token_id": 2, "eos_token_id": 2, "torch_dtype": "float16"})";

const char* kChatGlm2 = R"({
  "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": false,
  "add_qkv_bias": true, "apply_query_key_layer_scaling": true,
  "apply_residual_connection_post_layernorm": false, "attention_dropout": 0.0,
  "attention_softmax_in_fp32": true, "bias_dropout_fusion": true, "ffn_hidden_size": 13696,
  "fp32_residual_connection": false, "hidden_dropout": 0.0, "hidden_size": 4096,
  "kv_channels": 128, "layernorm_epsilon": 1e-05, "multi_query_attention": true,
  "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 28, "original_rope": true,
  "padded_vocab_size": 65024, "post_layer_norm": true, "rmsnorm": true, "seq_length": 32768,
  "use_cache": true, "tie_word_embeddings": false, "eos_token_id": 2, "pad_token_id": 0,
  "torch_dtype": "float16"})";

ModelConfig parse(const std::string& text) {
  auto r = parse_model_config(text);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : ModelConfig{};
}

// `text` with `field`'s value replaced (or the field removed when value is empty).
std::string with(std::string text, const std::string& field, const std::string& value) {
  const std::string key = "\"" + field + "\": ";
  const size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos) << field;
  size_t end = text.find_first_of(",}", at + key.size());
  if (value.empty()) {
    if (text[end] == ',') ++end;
    return text.erase(at, end - at);
  }
  return text.replace(at + key.size(), end - at - key.size(), value);
}

void expect_error(const std::string& text, StatusCode code, const std::string& needle) {
  auto r = parse_model_config(text);
  ASSERT_FALSE(r.ok()) << "parsed: " << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(OptConfig, Opt67b) {
  const ModelConfig c = parse(kOpt67b);
  EXPECT_EQ(c.arch, Architecture::kOpt);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 16384);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rotary_dim(), 0);
  EXPECT_EQ(c.position, PositionKind::kLearned);
  EXPECT_EQ(c.norm, NormKind::kLayer);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_TRUE(c.norm_before);
  EXPECT_TRUE(c.final_norm);
  EXPECT_FALSE(c.gated_mlp);
  EXPECT_EQ(c.hidden_act, "relu");
  EXPECT_TRUE(c.attention_bias && c.o_bias && c.mlp_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.has_projections());
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(c.torch_dtype, DType::kF16);

  // The checkpoint's 6 658 473 984 parameters less the two unused position rows.
  const WeightPlan p = plan_weights(c, DType::kF16);
  EXPECT_EQ(p.num_params, 6658473984 - 2 * 4096);
  EXPECT_EQ(p.slots.size(), 2u + 32 * 12 + 2);  // no lm_head: tied
  const auto s = gemm_shapes(c);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].name, "qkv");
  EXPECT_EQ(s[0].n, 3 * 4096);
  EXPECT_EQ(s[1].n, 4096);
  EXPECT_EQ(s[1].k, 4096);
  EXPECT_EQ(s[2].name, "fc1");
  EXPECT_EQ(s[2].n, 16384);
  EXPECT_EQ(s[3].name, "fc2");
  EXPECT_EQ(s[3].k, 16384);
  EXPECT_EQ(s[4].name, "lm_head");
  EXPECT_EQ(s[4].n, 50272);
  EXPECT_EQ(s[4].count, 1);
  // OptModel runs its LayerNorms and activation as kernels of their own: no prologue.
  for (const GemmShape& g : s) EXPECT_EQ(g.prologue, LinearPrologue::Kind::kNone) << g.name;
}

TEST(OptConfig, Opt350mPostNormWithProjections) {
  const ModelConfig c = parse(kOpt350m);
  EXPECT_FALSE(c.norm_before);
  EXPECT_FALSE(c.final_norm);  // OPTDecoder builds final_layer_norm for pre-norm only
  EXPECT_TRUE(c.tie_word_embeddings);  // the PretrainedConfig default
  EXPECT_EQ(c.embed_dim, 512);
  EXPECT_EQ(c.token_dim(), 512);
  EXPECT_TRUE(c.has_projections());
  const auto s = gemm_shapes(c);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[4].k, 512);  // lm_head [V, 512]
  EXPECT_EQ(s[5].name, "project_in");
  EXPECT_EQ(s[5].n, 1024);
  EXPECT_EQ(s[5].k, 512);
  EXPECT_EQ(s[6].name, "project_out");
  EXPECT_EQ(s[6].n, 512);
  // Published: 331 196 416 parameters (with the 2 offset rows of the position table).
  EXPECT_EQ(plan_weights(c, DType::kF16).num_params, 331196416 - 2 * 1024);
  // "decoder." and "model.decoder." spellings are both accepted.
  const auto specs = weight_specs(c);
  EXPECT_EQ(specs[0].sources[0].names,
            (std::vector<std::string>{"model.decoder.embed_tokens.weight",
                                      "decoder.embed_tokens.weight"}));
  EXPECT_EQ(specs[1].name, "pos_embed");
  EXPECT_EQ(specs[1].sources[0].skip_rows, 2);
  EXPECT_EQ(specs[1].sources[0].shape, (Shape{2050, 1024}));
}

TEST(OptConfig, ErrorsNameTheField) {
  expect_error(with(kOpt67b, "ffn_dim", ""), StatusCode::kInvalidArgument, "ffn_dim");
  expect_error(with(kOpt67b, "ffn_dim", "0"), StatusCode::kInvalidArgument, "ffn_dim");
  expect_error(with(kOpt67b, "num_attention_heads", "30"), StatusCode::kInvalidArgument,
               "num_attention_heads");
  expect_error(with(kOpt67b, "activation_function", "\"silu\""), StatusCode::kUnsupported,
               "activation_function");
  expect_error(with(kOpt67b, "layer_norm_elementwise_affine", "false"), StatusCode::kUnsupported,
               "layer_norm_elementwise_affine");
  expect_error(with(kOpt67b, "word_embed_proj_dim", "8192"), StatusCode::kUnsupported,
               "word_embed_proj_dim");
  expect_error(with(kOpt67b, "do_layer_norm_before", "1"), StatusCode::kInvalidArgument,
               "do_layer_norm_before");
  const ModelConfig nb = parse(with(kOpt67b, "enable_bias", "false"));
  EXPECT_FALSE(nb.attention_bias || nb.o_bias || nb.mlp_bias);
  EXPECT_EQ(plan_weights(nb, DType::kF16).slots.size(), 2u + 32 * 8 + 2);
}

TEST(ChatGlmConfig, ChatGlm2_6b) {
  const ModelConfig c = parse(kChatGlm2);
  EXPECT_EQ(c.arch, Architecture::kChatGlm);
  EXPECT_EQ(c.num_layers, 28);
  EXPECT_EQ(c.intermediate_size, 13696);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 65024);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.rotary_dim(), 64);
  EXPECT_TRUE(c.rope.interleaved);
  EXPECT_FLOAT_EQ(c.rope.theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.norm, NormKind::kRms);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.o_bias || c.mlp_bias);
  EXPECT_TRUE(c.gated_mlp);
  EXPECT_TRUE(c.final_norm);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  // 32 of 64 inv_freq entries: 10000^(-2i/64).
  const auto inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_FLOAT_EQ(inv[1], static_cast<float>(std::pow(10000.0, -2.0 / 64)));

  const WeightPlan p = plan_weights(c, DType::kF16);
  EXPECT_EQ(p.num_params, 6243584000);  // every tensor of the checkpoint, inv_freq aside
  const auto s = gemm_shapes(c);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].n, (32 + 2 * 2) * 128);
  EXPECT_EQ(s[0].k, 4096);
  EXPECT_EQ(s[1].n, 4096);
  EXPECT_EQ(s[1].k, 4096);
  EXPECT_EQ(s[2].name, "gate_up");
  EXPECT_EQ(s[2].n, 2 * 13696);
  EXPECT_EQ(s[3].k, 13696);
  EXPECT_EQ(s[4].n, 65024);
  EXPECT_EQ(s[0].count, 28);
}

TEST(ChatGlmConfig, VariantsAndErrors) {
  const ModelConfig r = parse(with(kChatGlm2, "seq_length", "32768, \"rope_ratio\": 50"));
  EXPECT_FLOAT_EQ(r.rope.theta, 500000.0f);
  const ModelConfig lb = parse(with(kChatGlm2, "add_bias_linear", "true"));
  EXPECT_TRUE(lb.attention_bias && lb.o_bias && lb.mlp_bias);
  const ModelConfig mha = parse(with(kChatGlm2, "multi_query_attention", "false"));
  EXPECT_EQ(mha.num_kv_heads, 32);
  const ModelConfig nofinal = parse(with(kChatGlm2, "post_layer_norm", "false"));
  EXPECT_FALSE(nofinal.final_norm);
  // Without the final norm the LM head's GEMV has no prologue; qkv keeps its norm.
  const auto shapes = gemm_shapes(nofinal);
  EXPECT_EQ(shapes.back().prologue, LinearPrologue::Kind::kNone);
  EXPECT_EQ(shapes[0].prologue, LinearPrologue::Kind::kRmsNorm);
  EXPECT_EQ(gemm_shapes(parse(kChatGlm2)).back().prologue, LinearPrologue::Kind::kRmsNorm);

  expect_error(with(kChatGlm2, "ffn_hidden_size", ""), StatusCode::kInvalidArgument,
               "ffn_hidden_size");
  expect_error(with(kChatGlm2, "kv_channels", "130"), StatusCode::kInvalidArgument,
               "kv_channels");
  expect_error(with(kChatGlm2, "multi_query_group_num", "3"), StatusCode::kInvalidArgument,
               "multi_query_group_num");
  expect_error(with(kChatGlm2, "rmsnorm", "false"), StatusCode::kUnsupported, "rmsnorm");
  expect_error(with(kChatGlm2, "apply_residual_connection_post_layernorm", "true"),
               StatusCode::kUnsupported, "apply_residual_connection_post_layernorm");
  // ChatGLM-6B (v1) shares the model_type.
  expect_error(with(kChatGlm2, "kv_channels", ""), StatusCode::kUnsupported, "ChatGLM-6B");
  expect_error(with(kChatGlm2, "model_type", "\"glm\""), StatusCode::kUnsupported,
               "llama, opt, chatglm");
}

TEST(LlamaConfig, Llama2_13bPlanAndBiases) {
  const char* cfg = R"({"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824,
    "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 40,
    "vocab_size": 32000, "rms_norm_eps": 1e-05, "rope_theta": 10000.0})";
  const ModelConfig c = parse(cfg);
  EXPECT_EQ(plan_weights(c, DType::kF16).num_params, 13015864320);  // published
  const auto s = gemm_shapes(c);
  EXPECT_EQ(s[0].n, 3 * 5120);
  EXPECT_EQ(s[2].n, 2 * 13824);
  // attention_bias gives q, k, v and o biases; mlp_bias the MLP's.
  const ModelConfig b =
      parse(with(cfg, "vocab_size", "32000, \"attention_bias\": true, \"mlp_bias\": true"));
  EXPECT_TRUE(b.attention_bias && b.o_bias && b.mlp_bias);
  const WeightPlan pb = plan_weights(b, DType::kF16);
  EXPECT_EQ(pb.slots.size(), 1u + 40 * 10 + 2);
  EXPECT_EQ(pb.num_params, 13015864320 + 40 * (3 * 5120 + 5120 + 2 * 13824 + 5120));
}

}  // namespace
}  // namespace fdpp
