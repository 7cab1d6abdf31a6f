// Sizes in config.json past what any model has: refused at parse time, so that no later
// product (qkv_dim, a weight's bytes, the KV cache) can overflow, and sized by arithmetic
// (weight_totals), never by building the list of what a config describes.
#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/model.h"
#include "model/weights.h"

namespace fdpp {
namespace {

nlohmann::json llama() {
  return {{"model_type", "llama"},       {"hidden_size", 64},        {"intermediate_size", 172},
          {"num_hidden_layers", 5},      {"num_attention_heads", 8}, {"num_key_value_heads", 4},
          {"vocab_size", 512},           {"max_position_embeddings", 512}};
}

std::string error_of(const nlohmann::json& j) {
  auto c = parse_model_config(j.dump());
  return c.ok() ? "ok" : c.status().message();
}

TEST(ConfigLimits, HugeDimsAreRefusedByName) {
  const auto start = std::chrono::steady_clock::now();
  auto j = llama();
  j["num_hidden_layers"] = 2147483647;
  EXPECT_EQ(error_of(j), "field 'num_hidden_layers' is 2147483647, past fdpp's limit of 1024");
  j = llama();
  j["num_hidden_layers"] = 1000000;
  EXPECT_EQ(error_of(j), "field 'num_hidden_layers' is 1000000, past fdpp's limit of 1024");
  j = llama();
  j["head_dim"] = 268435456;  // (8 + 2·4) · 2^28 overflowed int in qkv_dim()
  EXPECT_EQ(error_of(j), "field 'head_dim' is 268435456, past fdpp's limit of 4096");
  j = llama();
  j["head_dim"] = 2147483646;  // float(head_dim) · 1.0 overflowed int in rotary_dim()
  EXPECT_EQ(error_of(j), "field 'head_dim' is 2147483646, past fdpp's limit of 4096");
  j = llama();
  j["num_attention_heads"] = j["num_key_value_heads"] = 1 << 30;
  EXPECT_EQ(error_of(j), "field 'num_attention_heads' is 1073741824, past fdpp's limit of 4096");
  j = llama();
  j["vocab_size"] = 1 << 30;
  EXPECT_EQ(error_of(j), "field 'vocab_size' is 1073741824, past fdpp's limit of 16777216");
  j = llama();
  j["hidden_size"] = 1 << 30;
  j["head_dim"] = 8;
  EXPECT_EQ(error_of(j), "field 'hidden_size' is 1073741824, past fdpp's limit of 16777216");
  j = llama();
  j["hidden_size"] = 1 << 20;  // head_dim derived as hidden / heads = 131072
  EXPECT_EQ(error_of(j),
            "field 'hidden_size / num_attention_heads' is 131072, past fdpp's limit of 4096");
  j = {{"model_type", "chatglm"}, {"hidden_size", 64},    {"ffn_hidden_size", 128},
       {"num_layers", 5000},      {"num_attention_heads", 8}, {"kv_channels", 8},
       {"padded_vocab_size", 512}};
  EXPECT_EQ(error_of(j), "field 'num_layers' is 5000, past fdpp's limit of 1024");
  j = {{"model_type", "opt"},          {"hidden_size", 64},         {"ffn_dim", 128},
       {"num_hidden_layers", 4096},    {"num_attention_heads", 8},  {"vocab_size", 512}};
  EXPECT_EQ(error_of(j), "field 'num_hidden_layers' is 4096, past fdpp's limit of 1024");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ConfigLimits, TheLargestAcceptedConfigIsSizedExactly) {
  auto j = llama();
  j["num_hidden_layers"] = 1024;
  j["num_attention_heads"] = j["num_key_value_heads"] = 4096;
  j["head_dim"] = 4096;
  j["hidden_size"] = j["intermediate_size"] = j["vocab_size"] = 1 << 24;
  auto c = parse_model_config(j.dump());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->qkv_dim(), 3 * 4096 * 4096);
  EXPECT_EQ(c->rotary_dim(), 4096);
  const auto start = std::chrono::steady_clock::now();
  const WeightTotals t = weight_totals(*c, DType::kF16);
  // Per layer: qkv 3·2^24·2^24 + o 2^24·2^24 + gate_up 2·2^48 + down 2^48 + two norms.
  const int64_t layer = (3 + 1 + 2 + 1) * (int64_t{1} << 48) + 2 * (int64_t{1} << 24);
  const int64_t outside = 2 * (int64_t{1} << 48) + (int64_t{1} << 24);  // embed, lm_head, norm
  EXPECT_EQ(t.params, 1024 * layer + outside);
  ModelLimits lim;
  lim.context = 2147483647;
  lim.max_batch = 2147483647;
  lim.max_tokens = 2147483647;
  EXPECT_EQ(plan_memory(*c, DType::kF16, lim).total(), SIZE_MAX);  // saturates, never wraps
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ConfigLimits, WeightTotalsMatchTheFullPlan) {
  for (const char* type : {"llama", "opt", "chatglm"}) {
    nlohmann::json j = llama();
    if (std::string(type) == "opt") {
      j = {{"model_type", "opt"}, {"hidden_size", 64}, {"ffn_dim", 128}, {"num_hidden_layers", 7},
           {"num_attention_heads", 8}, {"vocab_size", 512}, {"word_embed_proj_dim", 32}};
    } else if (std::string(type) == "chatglm") {
      j = {{"model_type", "chatglm"}, {"hidden_size", 64}, {"ffn_hidden_size", 128},
           {"num_layers", 7}, {"num_attention_heads", 8}, {"kv_channels", 8},
           {"padded_vocab_size", 512}, {"multi_query_attention", true},
           {"multi_query_group_num", 2}};
    }
    auto c = parse_model_config(j.dump());
    ASSERT_TRUE(c.ok()) << type << ": " << c.status().message();
    for (DType d : {DType::kF16, DType::kF32}) {
      const WeightPlan p = plan_weights(*c, d);
      const WeightTotals t = weight_totals(*c, d);
      EXPECT_EQ(t.bytes, p.total_bytes) << type;
      EXPECT_EQ(t.params, p.num_params) << type;
    }
  }
}

}  // namespace
}  // namespace fdpp
