// stories260K end to end, against the transformers reference (greedy ids and text equal
// it, teacher-forced logits match it to 1e-4: fp32 activations, so the CPU target), and
// the engine's request handling (context full, bad requests, a missing or corrupt model),
// which does not depend on the device and so runs on every target. The CUDA targets'
// precision, graph, PDL and GEMM-policy checks: stories_cuda_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "fdpp/engine.h"
#include "model/config.h"
#include "common/stories_reference.h"
#include "common/test_util.h"
#include "e2e/e2e_util.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {
namespace {

using Reference = test::StoriesReference;
Reference load_reference() { return test::load_stories_reference(); }

// An engine on stories260K on the test's target.
class StoriesTest : public ::testing::TestWithParam<test::E2eTarget> {
 protected:
  void SetUp() override { FDPP_E2E_REQUIRE_TARGET(GetParam()); }
  std::unique_ptr<Engine> make_engine(EngineOptions o = {}) {
    o.model_dir = test::models_dir() / "stories260K";
    auto e = Engine::create(GetParam().apply(o));
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  }
};

// Checks against the fp32 reference: the CPU target.
class EndToEnd : public StoriesTest {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EndToEnd);
INSTANTIATE_TEST_SUITE_P(Targets, EndToEnd, ::testing::ValuesIn(test::e2e_targets({test::kCpu})),
                         test::e2e_target_name);

// Request handling: every target.
class EndToEndRequests : public StoriesTest {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EndToEndRequests);
INSTANTIATE_TEST_SUITE_P(Targets, EndToEndRequests,
                         ::testing::ValuesIn(test::e2e_targets({test::kCpu, test::kCudaFp16})),
                         test::e2e_target_name);

TEST_P(EndToEnd, GreedyIdsAndTextEqualTheReference) {
  const Reference ref = load_reference();
  ASSERT_EQ(ref.sequence.size(), 65u);
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  auto prompt = engine->tokenize("Once upon a time");
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  EXPECT_EQ(*prompt, ref.prompt_ids);

  const int n_new = static_cast<int>(ref.sequence.size() - ref.prompt_ids.size());  // 60
  auto out = engine->generate({{*prompt, test::greedy(n_new)}}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<int> seq = *prompt;
  seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
  EXPECT_EQ(seq, ref.sequence);
  EXPECT_EQ(engine->tokenizer()->decode(seq), ref.text);
  // The streamed text is the continuation of the prompt's text.
  EXPECT_EQ(engine->tokenizer()->decode(*prompt) + (*out)[0].text, ref.text);
  EXPECT_EQ((*out)[0].finish, FinishReason::kLength);
}

TEST_P(EndToEnd, TeacherForcedLogitsMatchTheReference) {
  const Reference ref = load_reference();
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  const std::vector<int> input(ref.sequence.begin(), ref.sequence.begin() + 64);
  auto logits = engine->teacher_forced_logits(input);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  ASSERT_EQ(logits->size(), ref.logits.size());
  float max_err = 0;
  for (size_t i = 0; i < ref.logits.size(); ++i) max_err = std::max(max_err, std::abs((*logits)[i] - ref.logits[i]));
  EXPECT_LE(max_err, 1e-4f);
  EXPECT_GT(max_err, 0.0f) << "bit-identical logits from a different implementation: suspicious";
}

TEST_P(EndToEnd, ChunkedPrefillGivesTheSameLogits) {
  const Reference ref = load_reference();
  EngineOptions o;
  o.prefill_chunk = 7;  // 64 tokens in 10 chunks: attention must read earlier chunks from the cache
  auto engine = make_engine(o);
  ASSERT_TRUE(engine);
  const std::vector<int> input(ref.sequence.begin(), ref.sequence.begin() + 64);
  auto logits = engine->teacher_forced_logits(input);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  float max_err = 0;
  for (size_t i = 0; i < ref.logits.size(); ++i) max_err = std::max(max_err, std::abs((*logits)[i] - ref.logits[i]));
  EXPECT_LE(max_err, 1e-4f);
}

TEST_P(EndToEnd, BatchedDecodeEqualsSingleSequences) {
  const Reference ref = load_reference();
  EngineOptions o;
  o.max_batch = 3;
  auto engine = make_engine(o);
  ASSERT_TRUE(engine);
  // Three prompts of different lengths decode together with per-sequence positions.
  const std::vector<std::vector<int>> prompts = {
      ref.prompt_ids, {1, 403}, std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + 20)};
  std::vector<GenerationRequest> reqs;
  for (const auto& p : prompts) reqs.push_back({p, test::greedy(24)});
  auto batched = engine->generate(reqs, nullptr);
  ASSERT_TRUE(batched.ok()) << batched.status().to_string();
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto solo = engine->generate({reqs[i]}, nullptr);
    ASSERT_TRUE(solo.ok());
    EXPECT_EQ((*batched)[i].output_ids, (*solo)[0].output_ids) << "sequence " << i;
  }
  // The third prompt is a prefix of the reference: its continuation is the reference's.
  EXPECT_TRUE(std::equal((*batched)[2].output_ids.begin(), (*batched)[2].output_ids.end(),
                         ref.sequence.begin() + 20));
}

TEST_P(EndToEnd, SameSeedSameTextOtherSeedOtherText) {
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  auto prompt = engine->tokenize("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.max_new_tokens = 40;
  p.ignore_eos = true;
  auto run = [&](uint64_t seed) {
    p.seed = seed;
    auto out = engine->generate({{*prompt, p}}, nullptr);
    EXPECT_TRUE(out.ok());
    return (*out)[0].output_ids;
  };
  const auto a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 40u);
}

TEST_P(EndToEnd, StopStringEndsGenerationBeforeIt) {
  const Reference ref = load_reference();
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  auto prompt = engine->tokenize("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  SamplingParams p = test::greedy(60);
  p.stop = {"Lily"};
  std::string streamed;
  auto out = engine->generate({{*prompt, p}}, [&](int, int, std::string_view t) { streamed += t; });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].finish, FinishReason::kStop);
  EXPECT_EQ((*out)[0].text, ", there was a little girl named ");
  EXPECT_EQ(streamed, (*out)[0].text);
}

TEST_P(EndToEndRequests, ContextFullEndsGeneration) {
  EngineOptions o;
  o.context = 8;
  auto engine = make_engine(o);
  ASSERT_TRUE(engine);
  auto out = engine->generate({{{1, 403, 407, 261, 378}, test::greedy(100)}}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].finish, FinishReason::kContextFull);
  // Positions 0..7 hold 8 tokens; the token predicted at position 7 is the last one accepted.
  EXPECT_EQ((*out)[0].prompt_ids.size() + (*out)[0].output_ids.size(), 9u);
}

TEST_P(EndToEndRequests, BadRequestsAreClearErrors) {
  EngineOptions o;
  o.context = 16;
  auto engine = make_engine(o);
  ASSERT_TRUE(engine);
  auto too_long = engine->generate({{std::vector<int>(17, 5), test::greedy(4)}}, nullptr);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("context of 16"), std::string::npos);

  auto bad_id = engine->generate({{{1, 512}, test::greedy(4)}}, nullptr);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("512"), std::string::npos);

  auto zero = engine->generate({{{1, 403}, test::greedy(0)}}, nullptr);
  EXPECT_FALSE(zero.ok());
  auto empty = engine->generate({{{}, test::greedy(4)}}, nullptr);
  EXPECT_FALSE(empty.ok());
}

TEST_P(EndToEndRequests, MissingOrCorruptModelIsAnError) {
  // (The target's options, and scratch directories of its own: the CPU and the CUDA
  // instances may run at once.)
  EngineOptions o = GetParam().apply({});
  o.model_dir = test::scratch_dir("e2e_missing_" + GetParam().name()) / "nothing_here";
  auto e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);

  // A truncated weights file: the header claims more data than there is.
  const auto dir = test::scratch_dir("e2e_corrupt_" + GetParam().name());
  for (const auto& f : std::filesystem::directory_iterator(test::models_dir() / "stories260K"))
    if (f.is_regular_file()) std::filesystem::copy_file(f.path(), dir / f.path().filename());
  const std::string weights = test::read_file(dir / "model.safetensors");
  std::filesystem::permissions(dir / "model.safetensors", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  test::write_file(dir / "model.safetensors", weights.substr(0, weights.size() / 2));
  o.model_dir = dir;
  auto c = Engine::create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("model.safetensors"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace fdpp
