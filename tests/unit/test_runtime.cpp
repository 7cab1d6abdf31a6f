// Pure runtime pieces: sampling, stop strings, graph buckets, memory plans.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/config.h"
#include "model/gemm_shapes.h"
#include "model/model.h"
#include "model/weights.h"
#include "runtime/graph_bucket.h"
#include "runtime/sampler.h"
#include "runtime/stop_matcher.h"

namespace fdpp {
namespace {

TEST(Sampler, ArgmaxTakesTheLowestIndexAmongTiesAndSkipsNaN) {
  const float nan = std::nanf("");
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{nan, -1, nan, -0.5f}), 3);
  EXPECT_EQ(argmax(std::vector<float>{-INFINITY, -INFINITY}), 0);
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  std::vector<float> logits = {0.1f, 2.0f, 1.9f, -3.0f, 1.99f};
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 1;
  Sampler s(p, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(logits), 1);
  p.top_k = 0;
  p.top_p = 1e-6f;
  Sampler t(p, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.sample(logits), 1);
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.seed = 7;
  Sampler s(p, 0);
  std::map<int, int> counts;
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits)];
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.01);
}

TEST(Sampler, TopPDropsTheTail) {
  // Probabilities 0.5, 0.3, 0.2: top_p 0.75 keeps the first two (0.5 < 0.75 <= 0.8).
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 0.75f;
  Sampler s(p, 3);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) ++seen[s.sample(logits)];
  EXPECT_EQ(seen[2], 0);
  EXPECT_NEAR(seen[0] / 20000.0, 0.5 / 0.8, 0.02);
}

TEST(Sampler, SeedAndStreamDetermineTheDraws) {
  SamplingParams p;
  p.seed = 123;
  Sampler a(p, 0), b(p, 0), c(p, 1);
  bool differs = false;
  for (int i = 0; i < 16; ++i) {
    const double x = a.uniform();
    EXPECT_EQ(x, b.uniform());
    differs |= x != c.uniform();
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
  }
  EXPECT_TRUE(differs);
}

TEST(StopMatcher, HoldsBackPossibleStartsAndCutsAtTheStop) {
  StopMatcher m({"</end>", "\n\n"});
  EXPECT_EQ(m.push("Hello <"), "Hello ");
  EXPECT_EQ(m.push("/e"), "");
  EXPECT_EQ(m.push("x"), "</ex");  // no longer a prefix: released
  EXPECT_EQ(m.push(" tail\n"), " tail");
  EXPECT_EQ(m.push("\nmore"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.text(), "Hello </ex tail");
  EXPECT_EQ(m.push("ignored"), "");
}

TEST(StopMatcher, FlushReleasesTheHeldTail) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("abcST"), "abc");
  EXPECT_EQ(m.flush(), "ST");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.text(), "abcST");
  StopMatcher none({});
  EXPECT_EQ(none.push("anything"), "anything");
}

TEST(GraphBucket, PowersOfTwoFromTheMinimumCappedAtTheContext) {
  EXPECT_EQ(decode_length_bucket(1, 4096), 256);
  EXPECT_EQ(decode_length_bucket(256, 4096), 256);
  EXPECT_EQ(decode_length_bucket(257, 4096), 512);
  EXPECT_EQ(decode_length_bucket(1025, 4096), 2048);
  EXPECT_EQ(decode_length_bucket(4000, 4096), 4096);
  EXPECT_EQ(decode_length_bucket(3000, 3000), 3000);
  EXPECT_EQ(decode_length_bucket(5, 64), 64);
  for (int len = 1; len <= 5000; len += 37) EXPECT_GE(decode_length_bucket(len, 5000), len);
}

ModelConfig llama2_7b() {
  ModelConfig c;
  c.hidden_size = 4096;
  c.intermediate_size = 11008;
  c.num_layers = 32;
  c.num_heads = 32;
  c.num_kv_heads = 32;
  c.head_dim = 128;
  c.vocab_size = 32000;
  c.max_position_embeddings = 4096;
  return c;
}

TEST(Plans, Llama2_7bWeightsAndShapes) {
  const ModelConfig c = llama2_7b();
  const WeightPlan p = plan_weights(c, DType::kF16);
  EXPECT_EQ(p.num_params, 6738415616);  // the published parameter count of Llama-2-7B
  EXPECT_GE(p.total_bytes, static_cast<size_t>(p.num_params) * 2);
  EXPECT_LT(p.total_bytes, static_cast<size_t>(p.num_params) * 2 + p.slots.size() * 256);
  for (const auto& s : p.slots) EXPECT_EQ(s.offset % 256, 0u) << s.name;
  EXPECT_EQ(p.slots.size(), 1u + 32 * 6 + 2);

  const auto shapes = gemm_shapes(c);
  ASSERT_EQ(shapes.size(), 5u);
  EXPECT_EQ(shapes[0].n, 12288);  // QKV
  EXPECT_EQ(shapes[1].n, 4096);   // O
  EXPECT_EQ(shapes[2].n, 22016);  // gate|up
  EXPECT_EQ(shapes[3].k, 11008);  // down
  EXPECT_EQ(shapes[4].n, 32000);  // LM head
  // The prologue LlamaModel applies before each (the tuner times the fused GEMV with it).
  using Kind = LinearPrologue::Kind;
  EXPECT_EQ(shapes[0].prologue, Kind::kRmsNorm);  // attention norm
  EXPECT_EQ(shapes[1].prologue, Kind::kNone);     // O reads the attention output
  EXPECT_EQ(shapes[2].prologue, Kind::kRmsNorm);  // MLP norm
  EXPECT_EQ(shapes[3].prologue, Kind::kSiluMul);  // silu(gate) · up
  EXPECT_EQ(shapes[4].prologue, Kind::kRmsNorm);  // final norm
}

TEST(Plans, MemoryPlanCountsKvCacheAndActivations) {
  const ModelConfig c = llama2_7b();
  ModelLimits lim;
  lim.context = 1024;
  lim.max_batch = 8;
  lim.max_tokens = 1024;
  const MemoryPlan m = plan_memory(c, DType::kF16, lim);
  EXPECT_EQ(m.kv_cache_bytes, 2ull * 32 * 8 * 32 * 1024 * 128 * 2);  // 4 GiB
  EXPECT_GT(m.activation_bytes, 1024ull * (2 * 4096 + 12288 + 2 * 4096 + 3 * 11008 + 32000) * 2 - 1);
  EXPECT_EQ(m.total(), m.weight_bytes + m.kv_cache_bytes + m.activation_bytes);
}

}  // namespace
}  // namespace fdpp
