// stories260K on the CUDA targets (fp16, bf16): the greedy ids equal the transformers
// reference, teacher-forced logits stay close to it, and every decode path
// (eager, CUDA graphs, batched, teacher-forced through decode steps) agrees; GEMM policies,
// PDL and --autotune leave what the model says unchanged. Builds into gpu_test_e2e only
// (e2e_util.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/stories_reference.h"
#include "common/test_util.h"
#include "fdpp/engine.h"
#include "common/gpu_test_util.h"
#include "e2e/e2e_util.h"
#include "model/config.h"

namespace fdpp {
namespace {

using Reference = test::StoriesReference;
Reference load_reference() { return test::load_stories_reference(); }

std::unique_ptr<Engine> cuda_engine(const std::string& dtype, int max_batch = 1, bool graphs = true,
                                    const std::string& gemm = "auto", bool pdl = true) {
  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.device = "cuda";
  o.dtype = dtype;
  o.max_batch = max_batch;
  o.cuda_graphs = graphs;
  o.gemm = gemm;
  o.pdl = pdl;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// --autotune at engine start: the shapes are tuned, the batch-1 near ties settled by timed
// decode steps (tuning/gemm_table_setup.h), the table saved into the cache directory and
// used; the steps it timed are not counted in the softmax record, and the model still says
// what the reference says. Whether the settling itself runs depends on the tune: on the
// H200 stories260K's GEMVs beat cuBLASLt at M = 1 by more than kStepTieMargin, so it does
// not; the settling is tested on the CPU against a step model (test_gemm_table_tuning.cpp) and was
// measured on Llama-2-7B (docs/experiments/log.md, "`--autotune` settles batch-1 near ties
// by the decode step").
TEST(CudaAutotune, TunesSettlesSavesAndKeepsTheReferenceIds) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / ("fdpp-autotune-" + std::to_string(getpid()));
  fs::remove_all(cache);
  const char* old = std::getenv("FDPP_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("FDPP_CACHE_DIR", cache.c_str(), 1);
  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.device = "cuda";
  o.dtype = "fp16";
  o.softmax = "unified";
  o.autotune = true;
  auto e = Engine::create(o);
  if (old) setenv("FDPP_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("FDPP_CACHE_DIR");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  Engine& engine = **e;
  const std::string source = engine.gemm_table_source();
  ASSERT_EQ(source.rfind("file ", 0), 0u) << source;
  EXPECT_TRUE(fs::exists(source.substr(5))) << source;
  auto stats = engine.softmax_stats();
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->decode_rows, 0);
  auto out = engine.generate({{ref.prompt_ids, test::greedy(60)}}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<int> seq = ref.prompt_ids;
  seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
  const size_t decided = test::decided_greedy_tokens(ref.logits, 512, ref.prompt_ids.size(),
                                                     test::greedy_rel_margin("fp16"));
  const size_t n = std::min(seq.size(), ref.prompt_ids.size() + decided);
  EXPECT_EQ(std::vector<int>(seq.begin(), seq.begin() + n),
            std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + n));
  fs::remove_all(cache);
}

class CudaEndToEnd : public ::testing::TestWithParam<test::E2eTarget> {};

TEST_P(CudaEndToEnd, GreedyIdsEqualTheReference) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  for (bool graphs : {true, false}) {
    auto engine = cuda_engine(GetParam().dtype, 1, graphs);
    ASSERT_TRUE(engine);
    auto out = engine->generate({{ref.prompt_ids, test::greedy(60)}}, nullptr);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    std::vector<int> seq = ref.prompt_ids;
    seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
    ASSERT_EQ(seq.size(), ref.sequence.size());
    const size_t decided = test::decided_greedy_tokens(ref.logits, 512, ref.prompt_ids.size(),
                                                       test::greedy_rel_margin(GetParam().dtype));
    ASSERT_GE(decided, 12u);
    const size_t n = std::min(seq.size(), ref.prompt_ids.size() + decided);
    EXPECT_EQ(std::vector<int>(seq.begin(), seq.begin() + n),
              std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + n))
        << "graphs " << graphs << ", the first " << decided << " generated tokens compared";
  }
}

// The GEMM dispatch choice (issue 6) must not change what the model says: every forced
// path gives the reference's greedy ids (shapes a kernel cannot run, e.g. K = 172 for the
// 16-byte loads, fall back to cuBLASLt inside the policy).
TEST_P(CudaEndToEnd, GreedyIdsDoNotDependOnTheGemmPolicy) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  const size_t decided = test::decided_greedy_tokens(ref.logits, 512, ref.prompt_ids.size(),
                                                     test::greedy_rel_margin(GetParam().dtype));
  ASSERT_GE(decided, 12u);
  for (const char* gemm : {"auto", "gemv", "flat", "cublas"}) {
    auto engine = cuda_engine(GetParam().dtype, 1, true, gemm);
    ASSERT_TRUE(engine) << gemm;
    auto out = engine->generate({{ref.prompt_ids, test::greedy(60)}}, nullptr);
    ASSERT_TRUE(out.ok()) << gemm << ": " << out.status().to_string();
    std::vector<int> seq = ref.prompt_ids;
    seq.insert(seq.end(), (*out)[0].output_ids.begin(), (*out)[0].output_ids.end());
    const size_t n = std::min(seq.size(), ref.prompt_ids.size() + decided);
    EXPECT_EQ(std::vector<int>(seq.begin(), seq.begin() + n),
              std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + n))
        << "--gemm " << gemm;
  }
}

// PDL (src/backend/cuda/launch.h) changes when kernels start, never what they compute: the
// batched decode path, graphs included, must give bit-identical logits with it on and off. A
// kernel that touched its inputs before its griddepcontrol.wait would read the previous
// step's values here and differ.
TEST_P(CudaEndToEnd, ProgrammaticDependentLaunchLeavesLogitsBitIdentical) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  std::vector<std::vector<int>> seqs;
  for (int b = 0; b < 3; ++b)  // three lengths: rows finish at different steps
    seqs.emplace_back(ref.sequence.begin(), ref.sequence.begin() + 20 + 22 * b);
  for (const char* gemm : {"gemv", "auto"}) {
    std::vector<std::vector<float>> logits[2];
    for (int pdl = 0; pdl < 2; ++pdl) {
      auto engine = cuda_engine(GetParam().dtype, 3, true, gemm, pdl == 1);
      ASSERT_TRUE(engine);
      auto out = engine->teacher_forced_logits_decode(seqs);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      logits[pdl] = std::move(out).value();
    }
    ASSERT_EQ(logits[0].size(), seqs.size());
    for (size_t b = 0; b < seqs.size(); ++b) {
      ASSERT_EQ(logits[0][b].size(), logits[1][b].size());
      EXPECT_TRUE(std::memcmp(logits[0][b].data(), logits[1][b].data(),
                              logits[0][b].size() * sizeof(float)) == 0)
          << "--gemm " << gemm << ", sequence " << b;
    }
  }
}

Result<std::vector<float>> teacher_forced(const std::string& dtype, const std::vector<int>& ids) {
  auto engine = cuda_engine(dtype);
  if (!engine) return Internal("no engine");
  return engine->teacher_forced_logits(ids);
}

int same_argmax_rows(const std::vector<float>& a, const std::vector<float>& b, int V) {
  int same = 0;
  for (size_t r = 0; r * V < b.size(); ++r) {
    auto row_max = [&](const std::vector<float>& l) {
      return std::max_element(l.begin() + r * V, l.begin() + (r + 1) * V) - (l.begin() + r * V);
    };
    same += row_max(a) == row_max(b);
  }
  return same;
}

// fp16 must be within 1e-2 of the fp32 reference at every position. bf16 keeps 3
// mantissa bits fewer (epsilon 2^-8 vs 2^-11), and its measured error lies further from
// fp16's than the 8x of the epsilons (a width-64 model rounds its residual stream at every
// op; docs/experiments/log.md, "stories_cuda_test.cpp: fp16 and bf16 errors"). bf16 is held
// to 0.1 — about twice its measured error, far below what a wrong kernel gives — and every
// row whose reference top-2
// margin bf16 cannot flip must keep its argmax.
TEST(CudaEndToEndPrecision, TeacherForcedLogitsCloseToTheReference) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  const std::vector<int> input(ref.sequence.begin(), ref.sequence.begin() + 64);
  auto f16 = teacher_forced("fp16", input);
  auto b16 = teacher_forced("bf16", input);
  ASSERT_TRUE(f16.ok()) << f16.status().to_string();
  ASSERT_TRUE(b16.ok()) << b16.status().to_string();
  ASSERT_EQ(f16->size(), ref.logits.size());
  EXPECT_TRUE(test::all_finite(*f16, "fp16 logits"));
  EXPECT_TRUE(test::all_finite(*b16, "bf16 logits"));
  const double err16 = test::worst_row_rel_l2(*f16, ref.logits, 512);
  const double errb16 = test::worst_row_rel_l2(*b16, ref.logits, 512);
  std::printf("[ perf ] stories260K teacher-forced worst-row rel L2 vs fp32 reference: fp16 %.3g, bf16 %.3g\n",
              err16, errb16);
  EXPECT_GT(err16, 0.0);
  EXPECT_LE(err16, 1e-2);
  EXPECT_LE(errb16, 0.1);
  EXPECT_GE(same_argmax_rows(*f16, ref.logits, 512), 63);
  EXPECT_GE(same_argmax_rows(*b16, ref.logits, 512), 62);
  for (size_t r = 0; r < 64; ++r) {
    std::vector<float> row(ref.logits.begin() + r * 512, ref.logits.begin() + (r + 1) * 512);
    const auto top = std::max_element(row.begin(), row.end()) - row.begin();
    std::vector<float> sorted = row;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    if (sorted[0] - sorted[1] < 0.02 * std::abs(sorted[0])) continue;
    const float* b = b16->data() + r * 512;
    EXPECT_EQ(std::max_element(b, b + 512) - b, top) << "bf16 argmax of decided row " << r;
  }
}

TEST_P(CudaEndToEnd, DecodePathLogitsEqualPrefillPathLogits) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  auto engine = cuda_engine(GetParam().dtype, 3);
  ASSERT_TRUE(engine);
  // Three sequences of different lengths, fed one token per batched (graph-replayed) step.
  const std::vector<std::vector<int>> seqs = {
      std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + 64),
      std::vector<int>(ref.sequence.begin() + 1, ref.sequence.begin() + 30),
      std::vector<int>(ref.sequence.begin(), ref.sequence.begin() + 2)};
  auto dec = engine->teacher_forced_logits_decode(seqs);
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto pre = engine->teacher_forced_logits(seqs[i]);
    ASSERT_TRUE(pre.ok());
    ASSERT_EQ((*dec)[i].size(), pre->size());
    EXPECT_LE(test::worst_row_rel_l2((*dec)[i], *pre, 512),
              GetParam().dtype == "fp16" ? 5e-3 : 2e-2)
        << "sequence " << i;
  }
}

TEST_P(CudaEndToEnd, BatchedGreedyEqualsSingleSequences) {
  FDPP_REQUIRE_GPU();
  const Reference ref = load_reference();
  auto engine = cuda_engine(GetParam().dtype, 3);
  ASSERT_TRUE(engine);
  const std::vector<int> first20(ref.sequence.begin(), ref.sequence.begin() + 20);
  std::vector<GenerationRequest> reqs = {{ref.prompt_ids, test::greedy(40)},
                                         {{1, 403}, test::greedy(40)},
                                         {first20, test::greedy(40)}};
  auto batched = engine->generate(reqs, nullptr);
  ASSERT_TRUE(batched.ok()) << batched.status().to_string();
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto solo = engine->generate({reqs[i]}, nullptr);
    ASSERT_TRUE(solo.ok());
    EXPECT_EQ((*batched)[i].output_ids, (*solo)[0].output_ids) << "sequence " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, CudaEndToEnd,
                         ::testing::ValuesIn(test::e2e_targets({test::kCudaFp16,
                                                                 test::kCudaBf16})),
                         test::e2e_target_name);

}  // namespace
}  // namespace fdpp
