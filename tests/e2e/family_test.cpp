// OPT and ChatGLM2 end to end: tiny random models written here in their
// checkpoints' own layouts (pre- and post-norm OPT, project_in/out, both OPT namings,
// ChatGLM2 with and without the linear biases), loaded by the Engine, and their logits
// checked against the double-precision forward of tests/common/tiny_models.cpp; then
// the decode path, chunked prefill and batching against the prefill path (the CPU target:
// fp32 activations, held to 1e-5 of double precision), and the loader's errors (every
// target). The CUDA targets against the CPU forward: family_cuda_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "e2e/e2e_util.h"
#include "fdpp/engine.h"
#include "model/config.h"

namespace fdpp {
namespace {

std::vector<int> prompt(int n, int vocab, uint64_t seed) {
  std::vector<int> ids(n);
  uint64_t s = seed * 2654435761u + 12345;
  for (int& id : ids) id = static_cast<int>((s = s * 6364136223846793005ull + 1) >> 33) % vocab;
  return ids;
}

std::unique_ptr<Engine> engine(const std::filesystem::path& dir, EngineOptions o = {}) {
  o.model_dir = dir;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// A suite over (target, model variant): its tests' engine() is the one above on the target
// (::fdpp::engine: the unqualified name here is the member itself).
template <class Case>
class FamilyTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { FDPP_E2E_REQUIRE_TARGET(this->GetParam().target); }
  std::unique_ptr<Engine> engine(const std::filesystem::path& dir, EngineOptions o = {}) {
    return ::fdpp::engine(dir, this->GetParam().target.apply(o));
  }
};
// Every variant on every target of `targets` this binary runs, named "<target>_<variant>".
template <class Case>
std::vector<Case> on_targets(std::initializer_list<test::E2eTarget> targets,
                             std::vector<Case> variants) {
  std::vector<Case> out;
  for (const test::E2eTarget& t : test::e2e_targets(targets))
    for (Case c : variants) {
      c.target = t;
      out.push_back(c);
    }
  return out;
}

// max over rows of max_i |got - ref| / max_i |ref|.
double worst_row_error(const std::vector<float>& got, const std::vector<double>& ref, int V) {
  double worst = 0;
  for (size_t r = 0; r * V < ref.size(); ++r) {
    double amax = 0, emax = 0;
    for (int v = 0; v < V; ++v) {
      amax = std::max(amax, std::abs(ref[r * V + v]));
      emax = std::max(emax, std::abs(got[r * V + v] - ref[r * V + v]));
    }
    worst = std::max(worst, emax / amax);
  }
  return worst;
}

void expect_matches_reference(Engine& e, const std::vector<double>& ref,
                              const std::vector<int>& ids, int V, const std::string& what) {
  auto got = e.teacher_forced_logits(ids);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  ASSERT_EQ(got->size(), ref.size()) << what;
  const double err = worst_row_error(*got, ref, V);
  std::printf("[ worst err ] %-28s %.3g\n", what.c_str(), err);
  // fp32 activations against double through two blocks; a wrong bias, norm or rotation
  // is off by far more than this.
  EXPECT_LE(err, 1e-5) << what;  // the design rule for fp32 paths
  EXPECT_GT(err, 0.0) << what << ": bit-identical to double precision is suspicious";
}

struct OptCase {
  std::string name;
  test::TinyOpt m;
  test::E2eTarget target;
};
void PrintTo(const OptCase& c, std::ostream* os) { *os << c.name; }

class OptEndToEnd : public FamilyTest<OptCase> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OptEndToEnd);

TEST_P(OptEndToEnd, LogitsMatchTheDoubleReference) {
  const test::TinyOpt& m = GetParam().m;
  const auto dir = test::scratch_dir("opt_" + GetParam().name);
  const test::TensorMap w = test::write_tiny_opt(dir, m);
  auto cfg = load_model_config(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->arch, Architecture::kOpt);
  EXPECT_EQ(cfg->rotary_dim(), 0);
  EXPECT_EQ(cfg->final_norm, m.pre_norm);
  auto e = engine(dir);
  ASSERT_TRUE(e);
  const std::vector<int> ids = prompt(23, m.vocab, m.seed);
  expect_matches_reference(*e, test::opt_reference_logits(m, w, ids), ids, m.vocab,
                           "opt " + GetParam().name);
}

TEST_P(OptEndToEnd, DecodeChunkedAndBatchedPathsAgree) {
  const test::TinyOpt& m = GetParam().m;
  const auto dir = test::scratch_dir("opt_paths_" + GetParam().name);
  test::write_tiny_opt(dir, m);
  EngineOptions o;
  o.max_batch = 3;
  o.prefill_chunk = 5;  // 23 tokens in 5 chunks: positions and cache reads across chunks
  auto e = engine(dir, o);
  ASSERT_TRUE(e);
  const std::vector<std::vector<int>> seqs = {prompt(23, m.vocab, 7), prompt(9, m.vocab, 8),
                                              prompt(2, m.vocab, 9)};
  auto dec = e->teacher_forced_logits_decode(seqs);
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto pre = e->teacher_forced_logits(seqs[i]);
    ASSERT_TRUE(pre.ok());
    ASSERT_EQ((*dec)[i].size(), pre->size());
    std::vector<double> ref(pre->begin(), pre->end());
    EXPECT_LE(worst_row_error((*dec)[i], ref, m.vocab), 1e-5) << "sequence " << i;
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 12;
  greedy.ignore_eos = true;
  auto a = e->generate({{seqs[0], greedy}, {seqs[1], greedy}}, nullptr);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto b = e->generate({{seqs[1], greedy}}, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*a)[1].output_ids, (*b)[0].output_ids);
  EXPECT_EQ((*a)[0].output_ids.size(), 12u);
}

test::TinyOpt opt_with(void (*f)(test::TinyOpt&)) {
  test::TinyOpt m;
  f(m);
  return m;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, OptEndToEnd,
    ::testing::ValuesIn(on_targets<OptCase>({test::kCpu}, {
        OptCase{"pre_norm", test::TinyOpt{}},
        // OPT-350m's shape: post-norm blocks, no final norm, word_embed_proj_dim < hidden.
        OptCase{"post_norm_proj", opt_with([](test::TinyOpt& m) {
                  m.pre_norm = false;
                  m.proj_dim = 32;
                  m.seed = 3;
                })},
        OptCase{"pre_norm_proj_untied_gelu_decoder_names", opt_with([](test::TinyOpt& m) {
                  m.proj_dim = 24;
                  m.tied = false;
                  m.act = "gelu";
                  m.decoder_prefix = true;
                  m.heads = 3;  // head_dim 16
                  m.seed = 4;
                })},
        OptCase{"bf16_checkpoint", opt_with([](test::TinyOpt& m) {
                  m.dtype = "BF16";
                  m.seed = 5;
                })}})),
    [](const ::testing::TestParamInfo<OptCase>& i) {
      return i.param.target.name() + "_" + i.param.name;
    });

struct GlmCase {
  std::string name;
  test::TinyGlm m;
  test::E2eTarget target;
};
void PrintTo(const GlmCase& c, std::ostream* os) { *os << c.name; }

class ChatGlmEndToEnd : public FamilyTest<GlmCase> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ChatGlmEndToEnd);

TEST_P(ChatGlmEndToEnd, LogitsMatchTheDoubleReference) {
  const test::TinyGlm& m = GetParam().m;
  const auto dir = test::scratch_dir("glm_" + GetParam().name);
  const test::TensorMap w = test::write_tiny_chatglm(dir, m);
  auto cfg = load_model_config(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->arch, Architecture::kChatGlm);
  EXPECT_EQ(cfg->rotary_dim(), m.kv_channels / 2);
  EXPECT_TRUE(cfg->rope.interleaved);
  EXPECT_EQ(cfg->num_kv_heads, m.kv_heads);
  auto e = engine(dir);
  ASSERT_TRUE(e);
  const std::vector<int> ids = prompt(31, m.vocab, m.seed);
  expect_matches_reference(*e, test::chatglm_reference_logits(m, w, ids), ids, m.vocab,
                           "chatglm " + GetParam().name);
}

TEST_P(ChatGlmEndToEnd, DecodePathAgreesWithPrefill) {
  const test::TinyGlm& m = GetParam().m;
  const auto dir = test::scratch_dir("glm_paths_" + GetParam().name);
  test::write_tiny_chatglm(dir, m);
  EngineOptions o;
  o.max_batch = 2;
  o.prefill_chunk = 6;
  auto e = engine(dir, o);
  ASSERT_TRUE(e);
  const std::vector<std::vector<int>> seqs = {prompt(17, m.vocab, 3), prompt(5, m.vocab, 4)};
  auto dec = e->teacher_forced_logits_decode(seqs);
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto pre = e->teacher_forced_logits(seqs[i]);
    ASSERT_TRUE(pre.ok());
    std::vector<double> ref(pre->begin(), pre->end());
    EXPECT_LE(worst_row_error((*dec)[i], ref, m.vocab), 1e-5) << "sequence " << i;
  }
}

test::TinyGlm glm_with(void (*f)(test::TinyGlm&)) {
  test::TinyGlm m;
  f(m);
  return m;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ChatGlmEndToEnd,
    ::testing::ValuesIn(on_targets<GlmCase>({test::kCpu}, {
        GlmCase{"chatglm2", test::TinyGlm{}},
        // add_bias_linear, rope_ratio (ChatGLM3-32K style), no final norm, MHA-ish groups.
        GlmCase{"biases_rope_ratio", glm_with([](test::TinyGlm& m) {
                  m.linear_bias = true;
                  m.qkv_bias = false;
                  m.rope_ratio = 50.0;
                  m.post_layer_norm = false;
                  m.kv_heads = 4;
                  m.kv_channels = 12;
                  m.seed = 6;
                })},
        GlmCase{"f16_checkpoint_mqa1", glm_with([](test::TinyGlm& m) {
                  m.dtype = "F16";
                  m.kv_heads = 1;
                  m.seed = 7;
                })}})),
    [](const ::testing::TestParamInfo<GlmCase>& i) {
      return i.param.target.name() + "_" + i.param.name;
    });

// ---- loader errors -----------------------------------------------------------------

// The loader's errors do not depend on the device: every target (scratch directories of
// each target's own, as the CPU and the CUDA instances may run at once).
class FamilyLoading : public ::testing::TestWithParam<test::E2eTarget> {
 protected:
  void SetUp() override { FDPP_E2E_REQUIRE_TARGET(GetParam()); }
};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FamilyLoading);
INSTANTIATE_TEST_SUITE_P(Targets, FamilyLoading,
                         ::testing::ValuesIn(test::e2e_targets({test::kCpu, test::kCudaFp16})),
                         test::e2e_target_name);

TEST_P(FamilyLoading, MissingTensorWrongShapeAndContextAreNamed) {
  const auto dir = test::scratch_dir("opt_broken_" + GetParam().name());
  test::TinyOpt m;
  test::write_tiny_opt(dir, m);
  // Context past the learned positions.
  EngineOptions o = GetParam().apply({});
  o.model_dir = dir;
  o.context = m.max_pos + 1;
  auto e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(e.status().message().find("max_position_embeddings"), std::string::npos);

  // A config whose ffn_dim disagrees with the file: the tensor and both shapes are named.
  std::string cfg = test::read_file(dir / "config.json");
  const std::string from = "\"ffn_dim\": 80", to = "\"ffn_dim\": 81";
  ASSERT_NE(cfg.find(from), std::string::npos);
  test::write_file(dir / "config.json", cfg.replace(cfg.find(from), from.size(), to));
  o.context = 0;
  e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("model.decoder.layers.0.fc1.weight"), std::string::npos)
      << e.status().message();
  EXPECT_NE(e.status().message().find("[81, 48]"), std::string::npos) << e.status().message();

  // A ChatGLM checkpoint without its output layer.
  const auto glm = test::scratch_dir("glm_broken_" + GetParam().name());
  test::TinyGlm g;
  g.post_layer_norm = false;
  test::write_tiny_chatglm(glm, g);
  std::string gc = test::read_file(glm / "config.json");
  const std::string pf = "\"post_layer_norm\": false";
  ASSERT_NE(gc.find(pf), std::string::npos);
  test::write_file(glm / "config.json",
                   gc.replace(gc.find(pf), pf.size(), "\"post_layer_norm\": true"));
  o.model_dir = glm;
  e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_NE(e.status().message().find("transformer.encoder.final_layernorm.weight"),
            std::string::npos)
      << e.status().message();
}

}  // namespace
}  // namespace fdpp
