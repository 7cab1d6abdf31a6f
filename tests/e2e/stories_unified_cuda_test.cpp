// stories260K on the CUDA backend with the unified-max softmax (design.md, Technique 1):
// greedy ids equal the transformers reference with row-following and with calibrated φ,
// CUDA graphs on and off; with φ forced far from every score every attention row of every
// layer is recomputed (and counted exactly) and the ids are still the reference's; a
// calibration measured on the GPU is written, found by the engine and used. Builds into
// gpu_test_e2e only (e2e_util.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/stories_reference.h"
#include "common/test_util.h"
#include "fdpp/engine.h"
#include "common/gpu_test_util.h"
#include "e2e/e2e_util.h"
#include "model/config.h"
#include "tuning/calibration.h"
#include "tuning/score_statistics.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {
namespace {

using Reference = test::StoriesReference;
Reference load_reference() { return test::load_stories_reference(); }

std::filesystem::path stories() { return test::models_dir() / "stories260K"; }

std::unique_ptr<Engine> engine(const std::string& dtype, const std::string& phi, bool graphs,
                               const std::string& calibration = "") {
  EngineOptions o;
  o.model_dir = stories();
  o.device = "cuda";
  o.dtype = dtype;
  o.cuda_graphs = graphs;
  o.softmax = "unified";
  o.phi = phi;
  o.calibration = calibration;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// A calibration file for stories260K with φ = `phi` in every layer.
std::filesystem::path write_calibration(const std::string& tag, float phi) {
  auto cfg = load_model_config(stories());
  EXPECT_TRUE(cfg.ok());
  Calibration c;
  c.num_layers = cfg->num_layers;
  c.num_heads = cfg->num_heads;
  c.num_kv_heads = cfg->num_kv_heads;
  c.head_dim = cfg->head_dim;
  auto fp = model_fingerprint(stories());
  EXPECT_TRUE(fp.ok());
  c.fingerprint = fp.ok() ? *fp : "";
  c.layers.resize(c.num_layers);
  for (CalibrationLayer& L : c.layers) L.phi = phi;
  const auto path = test::scratch_dir("unified_e2e_" + tag) / "calibration.json";
  EXPECT_TRUE(save_calibration(c, path).ok());
  return path;
}

class UnifiedEndToEnd : public ::testing::TestWithParam<test::E2eTarget> {};

TEST_P(UnifiedEndToEnd, GreedyIdsEqualTheReference) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  const auto calibration = write_calibration("phi0_" + GetParam().dtype, 0.f);
  const size_t decided = test::decided_greedy_tokens(ref.logits, 512, ref.prompt_ids.size(),
                                                     test::greedy_rel_margin(GetParam().dtype));
  ASSERT_GE(decided, 12u);
  for (const std::string phi : {"follow", "calibrated"})
    for (bool graphs : {true, false}) {
      SCOPED_TRACE(phi + (graphs ? " graphs" : " eager"));
      auto e = engine(GetParam().dtype, phi, graphs, calibration.string());
      ASSERT_TRUE(e);
      auto out = e->generate({{ref.prompt_ids, test::greedy(60)}}, nullptr);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      std::vector<int> seq = ref.prompt_ids;
      seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
      const size_t n = std::min(seq.size(), ref.prompt_ids.size() + decided);
      EXPECT_EQ(std::vector<int>(seq.begin(), seq.begin() + n),
                std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + n))
          << "the first " << decided << " generated tokens compared";
      auto st = e->softmax_stats();
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(st->prefill, "unified");
      EXPECT_EQ(st->decode, "unified");
      EXPECT_EQ(st->phi, phi);
      EXPECT_GT(st->decode_rows, 0);
      std::printf("[ perf ] stories260K %s unified φ %s: %lld of %lld prefill + %lld decode rows "
                  "recomputed (rate %.4f%%)\n",
                  GetParam().dtype.c_str(), phi.c_str(), static_cast<long long>(st->fallbacks()),
                  static_cast<long long>(st->prefill_rows * 5),
                  static_cast<long long>(st->decode_rows * 5), 100 * st->fallback_rate());
      // Scores of stories260K lie within ±300 of φ = 0, far inside the fp32 range: none.
      EXPECT_EQ(st->fallbacks(), 0);
    }
}

// φ = 1000 in every layer: every row of every layer leaves the range (m − φ ≈ −1000), is
// recomputed with the synchronized softmax, and counted once; the ids do not change.
TEST_P(UnifiedEndToEnd, EveryRowFallingBackStillGivesTheReference) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  const auto calibration = write_calibration("phi1000_" + GetParam().dtype, 1000.f);
  for (bool graphs : {true, false}) {
    auto e = engine(GetParam().dtype, "calibrated", graphs, calibration.string());
    ASSERT_TRUE(e);
    auto out = e->generate({{ref.prompt_ids, test::greedy(30)}}, nullptr);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    std::vector<int> seq = ref.prompt_ids;
    seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
    const size_t decided = test::decided_greedy_tokens(ref.logits, 512, ref.prompt_ids.size(),
                                                       test::greedy_rel_margin(GetParam().dtype));
    const size_t n = std::min(seq.size(), ref.prompt_ids.size() + decided);
    EXPECT_EQ(std::vector<int>(seq.begin(), seq.begin() + n),
              std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + n));
    auto st = e->softmax_stats();
    ASSERT_TRUE(st.ok());
    const int heads = e->config().num_heads;
    EXPECT_EQ(st->prefill_rows, static_cast<int64_t>(ref.prompt_ids.size()) * heads);
    EXPECT_EQ(st->decode_rows, 29 * heads);
    for (size_t l = 0; l < st->decode_fallbacks.size(); ++l) {
      EXPECT_EQ(st->prefill_fallbacks[l], st->prefill_rows) << "layer " << l;
      EXPECT_EQ(st->decode_fallbacks[l], st->decode_rows) << "layer " << l;
    }
    EXPECT_DOUBLE_EQ(st->fallback_rate(), 1.0);
    ASSERT_TRUE(e->reset_softmax_stats().ok());
    auto zero = e->softmax_stats();
    ASSERT_TRUE(zero.ok());
    EXPECT_EQ(zero->fallbacks(), 0);
    EXPECT_EQ(zero->decode_rows, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, UnifiedEndToEnd,
                         ::testing::ValuesIn(test::e2e_targets({test::kCudaFp16Unified,
                                                                 test::kCudaBf16Unified})),
                         test::e2e_target_name);

// fdpp calibrate's path on the GPU: score statistics of the built-in text, the file, and an
// engine that finds it by itself next to a copy of the model.
TEST(UnifiedEndToEndCalibration, GpuCalibrationIsFoundAndUsed) {
  FDPP_REQUIRE_GPU();
  const auto dir = test::scratch_dir("unified_e2e_model");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors",
                        "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"})
    std::filesystem::copy_file(stories() / f, dir / f);
  EngineOptions o;
  o.model_dir = dir;
  o.device = "cuda";
  o.context = 256;
  o.cuda_graphs = false;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto ids = (*e)->tokenize(builtin_calibration_text());
  ASSERT_TRUE(ids.ok());
  ids->resize(256);
  ScoreStatistics stats;
  ASSERT_TRUE(collect_score_statistics((*e)->model(), *ids, &stats).ok());
  EXPECT_EQ(stats.tokens, 256);
  Calibration c = build_calibration(stats, 0.9999);
  auto fp = model_fingerprint(dir);
  ASSERT_TRUE(fp.ok());
  c.fingerprint = *fp;
  c.head_dim = (*e)->config().head_dim;
  for (const CalibrationLayer& L : c.layers) {
    EXPECT_LT(L.score_lo, L.score_hi);
    EXPECT_LE(L.row_max_min, L.row_max_max);
    EXPECT_TRUE(std::isfinite(L.phi));
  }
  ASSERT_TRUE(save_calibration(c, calibration_path_in_model(dir)).ok());

  o.softmax = "auto";
  o.context = 0;
  auto u = Engine::create(o);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  auto st = (*u)->softmax_stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->prefill, "unified");  // auto: a calibration was found
  EXPECT_EQ(st->phi, "calibrated");
  EXPECT_NE(st->phi_source.find("fdpp_calibration.json"), std::string::npos) << st->phi_source;
  const Reference ref = load_reference();
  auto out = (*u)->generate({{ref.prompt_ids, test::greedy(60)}}, nullptr);
  ASSERT_TRUE(out.ok());
  std::vector<int> seq = ref.prompt_ids;
  seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
  EXPECT_EQ(seq, ref.sequence);
}

}  // namespace
}  // namespace fdpp
