// config.json parsing: real configs of the models fdpp targets, both
// transformers spellings of RoPE, and every class of malformed input.
#include <cctype>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "model/config.h"

namespace fdpp {
namespace {

const char* kLlama2_7B = R"({
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

// Older Llama-2-13B exports have no num_key_value_heads: it must default to the heads.
const char* kLlama2_13B = R"({
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "initializer_range": 0.02,
  "intermediate_size": 13824,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 40,
  "num_hidden_layers": 40,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "vocab_size": 32000
})";

// Llama-3.1-8B as transformers 4 writes it.
const char* kLlama3_8B_v4 = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 128256
})";

// The same model as transformers 5 writes it: rope_parameters, dtype, head_dim.
const char* kLlama3_8B_v5 = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "dtype": "bfloat16",
  "eos_token_id": [128001, 128008, 128009],
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rope_type": "llama3"
  },
  "tie_word_embeddings": false,
  "vocab_size": 128256
})";

ModelConfig parse_ok(const std::string& text, const std::string* gen = nullptr) {
  auto r = parse_model_config(text, gen);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : ModelConfig{};
}

// A minimal valid llama config with one field replaced (or added) by raw JSON text.
std::string minimal_with(const std::string& key, const std::string& value) {
  std::string base = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100)";
  const std::string quoted = "\"" + key + "\"";
  auto pos = base.find(quoted);
  if (pos == std::string::npos) return "{" + base + ", " + quoted + ": " + value + "}";
  auto end = base.find_first_of(",}", pos);
  if (end == std::string::npos) end = base.size();
  return "{" + base.substr(0, pos) + quoted + ": " + value + base.substr(end) + "}";
}

std::string minimal_without(const std::string& key) {
  std::string body = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100)";
  const std::string quoted = "\"" + key + "\"";
  auto pos = body.find(quoted);
  auto end = body.find(',', pos);
  body.erase(pos, end == std::string::npos ? std::string::npos : end - pos + 1);
  // Erasing the last field leaves a trailing comma.
  while (!body.empty() && (body.back() == ',' || std::isspace(body.back()))) body.pop_back();
  return "{" + body + "}";
}

void expect_error(const std::string& text, StatusCode code, const std::string& needle) {
  auto r = parse_model_config(text);
  ASSERT_FALSE(r.ok()) << "expected an error mentioning '" << needle << "' for " << text;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "message '" << r.status().message() << "' does not name '" << needle << "'";
}

// Independent of the library: the plain RoPE frequency.
double base_freq(double theta, int i, int dim) { return std::pow(theta, -2.0 * i / dim); }

TEST(Config, Llama2_7B) {
  ModelConfig c = parse_ok(kLlama2_7B);
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_STREQ(architecture_name(c.arch), "llama");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 11008);
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_FLOAT_EQ(c.rope.theta, 10000.0f);
  EXPECT_EQ(c.rotary_dim(), 128);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.hidden_act, "silu");
  ASSERT_TRUE(c.torch_dtype.has_value());
  EXPECT_EQ(*c.torch_dtype, DType::kF16);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(c.qkv_dim(), 3 * 4096);
}

TEST(Config, Llama2_13B) {
  ModelConfig c = parse_ok(kLlama2_13B);
  EXPECT_EQ(c.hidden_size, 5120);
  EXPECT_EQ(c.intermediate_size, 13824);
  EXPECT_EQ(c.num_layers, 40);
  EXPECT_EQ(c.num_heads, 40);
  EXPECT_EQ(c.num_kv_heads, 40);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.qkv_dim(), 3 * 5120);
}

TEST(Config, Llama3GqaWithLlama3Rope) {
  ModelConfig c = parse_ok(kLlama3_8B_v4);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.qkv_dim(), (32 + 2 * 8) * 128);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.rope.type, "llama3");
  EXPECT_FLOAT_EQ(c.rope.theta, 500000.0f);
  EXPECT_FLOAT_EQ(c.rope.factor, 8.0f);
  EXPECT_FLOAT_EQ(c.rope.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(c.rope.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  EXPECT_EQ(*c.torch_dtype, DType::kBF16);
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
}

TEST(Config, Transformers5SpellingGivesTheSameConfig) {
  ModelConfig a = parse_ok(kLlama3_8B_v4);
  ModelConfig b = parse_ok(kLlama3_8B_v5);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.rope.type, b.rope.type);
  EXPECT_EQ(a.rope.theta, b.rope.theta);
  EXPECT_EQ(a.rope.factor, b.rope.factor);
  EXPECT_EQ(a.rope.low_freq_factor, b.rope.low_freq_factor);
  EXPECT_EQ(a.rope.high_freq_factor, b.rope.high_freq_factor);
  EXPECT_EQ(a.rope.original_max_position_embeddings, b.rope.original_max_position_embeddings);
  EXPECT_EQ(a.rope.partial_rotary_factor, b.rope.partial_rotary_factor);
  EXPECT_EQ(a.torch_dtype, b.torch_dtype);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  EXPECT_EQ(a.eos_token_ids, b.eos_token_ids);
  EXPECT_EQ(rope_inv_freq(a), rope_inv_freq(b));
}

TEST(Config, Stories260KFromDisk) {
  auto r = load_model_config(test::models_dir() / "stories260K");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ModelConfig& c = r.value();
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope.theta, 10000.0f);
  EXPECT_EQ(*c.torch_dtype, DType::kF32);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.1f);  // 10000^(-2/8)
  EXPECT_FLOAT_EQ(f[2], 0.01f);
  EXPECT_FLOAT_EQ(f[3], 0.001f);
}

TEST(Config, Defaults) {
  ModelConfig c = parse_ok(minimal_with("vocab_size", "100"));
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_FLOAT_EQ(c.rope.theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.rope.partial_rotary_factor, 1.0f);
  EXPECT_FALSE(c.torch_dtype.has_value());
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_TRUE(c.eos_token_ids.empty());
}

TEST(Config, ExplicitHeadDimWinsAndNullMeansDefault) {
  ModelConfig c = parse_ok(minimal_with("head_dim", "32"));
  EXPECT_EQ(c.head_dim, 32);  // 4 heads * 32 != hidden 64, and that is allowed
  EXPECT_EQ(c.qkv_dim(), 3 * 4 * 32);
  c = parse_ok(minimal_with("head_dim", "null"));
  EXPECT_EQ(c.head_dim, 16);
  c = parse_ok(minimal_with("num_key_value_heads", "null"));
  EXPECT_EQ(c.num_kv_heads, 4);
}

TEST(Config, BiasFlagsAndSwish) {
  std::string t = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
    "attention_bias": true, "mlp_bias": true, "hidden_act": "swish"})";
  ModelConfig c = parse_ok(t);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.mlp_bias);
  EXPECT_EQ(c.hidden_act, "silu");
}

TEST(Config, LinearRopeBothSpellings) {
  ModelConfig a = parse_ok(minimal_with("rope_scaling", R"({"type": "linear", "factor": 4.0})"));
  ModelConfig b = parse_ok(minimal_with(
      "rope_parameters", R"({"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0})"));
  EXPECT_EQ(a.rope.type, "linear");
  EXPECT_EQ(b.rope.type, "linear");
  auto fa = rope_inv_freq(a);
  auto fb = rope_inv_freq(b);
  ASSERT_EQ(fa.size(), 8u);
  EXPECT_EQ(fa, fb);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(fa[i], static_cast<float>(base_freq(10000.0, i, 16) / 4.0)) << i;
  }
}

TEST(Config, DefaultRopeSpellings) {
  for (const char* scaling : {"null", R"({"rope_type": "default"})", R"({"type": "default"})"}) {
    ModelConfig c = parse_ok(minimal_with("rope_scaling", scaling));
    EXPECT_EQ(c.rope.type, "default") << scaling;
  }
  ModelConfig c = parse_ok(minimal_with("rope_parameters",
                                        R"({"rope_type": "default", "rope_theta": 1000000.0})"));
  EXPECT_FLOAT_EQ(c.rope.theta, 1e6f);
}

TEST(Config, PartialRotaryFactor) {
  ModelConfig c = parse_ok(minimal_with("partial_rotary_factor", "0.5"));
  EXPECT_EQ(c.rotary_dim(), 8);
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(f[i], static_cast<float>(base_freq(1e4, i, 8)));
  c = parse_ok(minimal_with("rope_parameters",
                            R"({"rope_type": "default", "partial_rotary_factor": 0.25})"));
  EXPECT_EQ(c.rotary_dim(), 4);
  // 16 * 0.0625 = 1 rotated dimension: not a whole pair.
  expect_error(minimal_with("partial_rotary_factor", "0.0625"), StatusCode::kInvalidArgument,
               "rotary");
  expect_error(minimal_with("partial_rotary_factor", "1.5"), StatusCode::kInvalidArgument,
               "partial_rotary_factor");
}

TEST(Config, DefaultInvFreqMatchesFormula) {
  ModelConfig c = parse_ok(kLlama2_7B);
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    const double want = base_freq(10000.0, i, 128);
    EXPECT_NEAR(f[i], want, 1e-7 * want) << i;
  }
}

TEST(Config, Llama3InvFreq) {
  ModelConfig c = parse_ok(kLlama3_8B_v4);
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), 64u);
  // Values of transformers' _compute_llama3_parameters (float64) for head_dim 128,
  // theta 5e5, factor 8, low 1, high 4, original context 8192: index 0 is in the
  // high-frequency band (kept), 30 in the blended band, 63 in the low band (/8).
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[30], static_cast<float>(0.0013718935677611381));
  EXPECT_FLOAT_EQ(f[63], static_cast<float>(3.068925988914511e-07));

  // And every index against the rule written out independently.
  const double kTwoPi = 6.283185307179586;
  int kept = 0, blended = 0, divided = 0;
  for (int i = 0; i < 64; ++i) {
    const double base = base_freq(500000.0, i, 128);
    const double wavelen = kTwoPi / base;
    double want;
    if (wavelen < 8192.0 / 4.0) {
      want = base, ++kept;
    } else if (wavelen > 8192.0 / 1.0) {
      want = base / 8.0, ++divided;
    } else {
      const double s = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      want = (1 - s) * base / 8.0 + s * base, ++blended;
    }
    EXPECT_NEAR(f[i], want, 1e-6 * want) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(blended, 0);
  EXPECT_GT(divided, 0);
}

TEST(Config, GenerationConfigOverridesSpecialTokens) {
  std::string gen = R"({"bos_token_id": 1, "eos_token_id": [2, 7], "do_sample": true})";
  ModelConfig c = parse_ok(kLlama2_7B, &gen);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{2, 7}));
  // A field generation_config.json leaves out (or sets to null) keeps config.json's value.
  gen = R"({"eos_token_id": null})";
  c = parse_ok(kLlama2_7B, &gen);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  gen = R"({"bos_token_id": 5})";
  c = parse_ok(kLlama2_7B, &gen);
  EXPECT_EQ(c.bos_token_id, 5);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  // Null in config.json: no token.
  c = parse_ok(minimal_with("bos_token_id", "null"));
  EXPECT_EQ(c.bos_token_id, -1);

  gen = "{not json";
  auto r = parse_model_config(kLlama2_7B, &gen);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("generation_config.json"), std::string::npos);
  gen = R"({"eos_token_id": "2"})";
  r = parse_model_config(kLlama2_7B, &gen);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("eos_token_id"), std::string::npos);
}

TEST(Config, Dtypes) {
  EXPECT_EQ(*parse_ok(minimal_with("torch_dtype", R"("float32")")).torch_dtype, DType::kF32);
  EXPECT_EQ(*parse_ok(minimal_with("dtype", R"("float16")")).torch_dtype, DType::kF16);
  EXPECT_FALSE(parse_ok(minimal_with("torch_dtype", "null")).torch_dtype.has_value());
  expect_error(minimal_with("torch_dtype", R"("float8_e4m3fn")"), StatusCode::kUnsupported,
               "float8_e4m3fn");
  expect_error(minimal_with("torch_dtype", "16"), StatusCode::kInvalidArgument, "torch_dtype");
}

TEST(ConfigErrors, MissingRequiredField) {
  for (const char* f : {"hidden_size", "intermediate_size", "num_hidden_layers",
                        "num_attention_heads", "vocab_size", "model_type"}) {
    expect_error(minimal_without(f), StatusCode::kInvalidArgument, f);
  }
}

TEST(ConfigErrors, WrongType) {
  expect_error(minimal_with("hidden_size", R"("4096")"), StatusCode::kInvalidArgument,
               "hidden_size");
  expect_error(minimal_with("num_hidden_layers", "2.5"), StatusCode::kInvalidArgument,
               "num_hidden_layers");
  expect_error(minimal_with("tie_word_embeddings", "1"), StatusCode::kInvalidArgument,
               "tie_word_embeddings");
  expect_error(minimal_with("rms_norm_eps", R"("1e-5")"), StatusCode::kInvalidArgument,
               "rms_norm_eps");
  expect_error(minimal_with("rope_scaling", "[1, 2]"), StatusCode::kInvalidArgument,
               "rope_scaling");
  expect_error(minimal_with("model_type", "7"), StatusCode::kInvalidArgument, "model_type");
  expect_error(minimal_with("vocab_size", "99999999999"), StatusCode::kInvalidArgument,
               "vocab_size");
}

TEST(ConfigErrors, BadValues) {
  expect_error(minimal_with("hidden_size", "0"), StatusCode::kInvalidArgument, "hidden_size");
  expect_error(minimal_with("vocab_size", "-3"), StatusCode::kInvalidArgument, "vocab_size");
  expect_error(minimal_with("num_key_value_heads", "3"), StatusCode::kInvalidArgument,
               "num_key_value_heads");
  expect_error(minimal_with("head_dim", "15"), StatusCode::kInvalidArgument, "head_dim");
  expect_error(minimal_with("num_attention_heads", "5"), StatusCode::kInvalidArgument,
               "hidden_size");  // 64 / 5, no head_dim
  expect_error(minimal_with("rms_norm_eps", "0"), StatusCode::kInvalidArgument, "rms_norm_eps");
  expect_error(minimal_with("rope_theta", "-1"), StatusCode::kInvalidArgument, "rope_theta");
  expect_error(minimal_with("eos_token_id", "100"), StatusCode::kInvalidArgument, "eos_token_id");
  expect_error(minimal_with("rope_scaling", R"({"rope_type": "linear"})"),
               StatusCode::kInvalidArgument, "rope_scaling.factor");
  expect_error(minimal_with("rope_parameters",
                            R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0})"),
               StatusCode::kInvalidArgument, "rope_parameters.original_max_position_embeddings");
  expect_error(minimal_with("rope_scaling",
                            R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8})"),
               StatusCode::kInvalidArgument, "high_freq_factor");
}

TEST(ConfigErrors, UnsupportedModelTypeActivationAndRope) {
  expect_error(minimal_with("model_type", R"("gpt_neox")"), StatusCode::kUnsupported, "gpt_neox");
  expect_error(minimal_with("model_type", R"("falcon")"), StatusCode::kUnsupported, "falcon");
  expect_error(minimal_with("hidden_act", R"("gelu")"), StatusCode::kUnsupported, "gelu");
  for (const char* t : {"dynamic", "yarn", "longrope"}) {
    expect_error(minimal_with("rope_scaling",
                              std::string(R"({"type": ")") + t + R"(", "factor": 2.0})"),
                 StatusCode::kUnsupported, t);
    expect_error(minimal_with("rope_parameters",
                              std::string(R"({"rope_type": ")") + t + R"(", "factor": 2.0})"),
                 StatusCode::kUnsupported, t);
  }
}

TEST(ConfigErrors, MalformedJson) {
  expect_error("{\"model_type\": \"llama\",", StatusCode::kInvalidArgument, "config.json");
  expect_error("", StatusCode::kInvalidArgument, "config.json");
  expect_error("[1, 2, 3]", StatusCode::kInvalidArgument, "object");
  expect_error("\xff\xfe{}", StatusCode::kInvalidArgument, "config.json");
}

TEST(ConfigErrors, MissingFile) {
  auto dir = test::scratch_dir("config_missing");
  auto r = load_model_config(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find((dir / "config.json").string()), std::string::npos)
      << r.status().message();
  r = load_model_config(dir / "no_such_dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(ConfigErrors, FileErrorsNameTheFolder) {
  auto dir = test::scratch_dir("config_bad");
  test::write_file(dir / "config.json", minimal_with("hidden_size", R"("x")"));
  auto r = load_model_config(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(dir.string()), std::string::npos);
  EXPECT_NE(r.status().message().find("hidden_size"), std::string::npos);

  // generation_config.json is read from the folder when present.
  test::write_file(dir / "config.json", kLlama2_7B);
  test::write_file(dir / "generation_config.json", R"({"eos_token_id": [2, 3]})");
  r = load_model_config(dir);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value().eos_token_ids, (std::vector<int>{2, 3}));
}

}  // namespace
}  // namespace fdpp
