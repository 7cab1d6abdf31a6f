// The GEMM dispatch decision (dispatch/gemm_plan.h) as a pure function: the
// built-in M thresholds, shapes the custom kernels cannot run (→ cuBLASLt),
// forced policies, an injected table, and the split-K plans the kernels are
// launched with. CUDA-free, so CI checks it without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/gemm_plan.h"

namespace fdpp {
namespace {

// An H200-like GPU: 132 SMs and plausible occupancies.
GemmDeviceTraits h200() {
  GemmDeviceTraits t;
  t.sm_count = 132;
  for (int m = 1; m <= GemvConfig::kMaxM; ++m) t.gemv_ctas_per_sm[m - 1] = m == 1 ? 4 : 3;
  for (int c = 0; c < kFlatConfigCount; ++c) t.flat_ctas_per_sm[c] = c == 0 ? 3 : 2;
  return t;
}

GemmProblem prob(int64_t m, int64_t n = 4096, int64_t k = 4096, DType dt = DType::kF16,
                 bool aligned = true) {
  return {m, n, k, dt, aligned};
}

// Llama-2-7B's [N, K] and the LM head.
const std::vector<std::pair<int64_t, int64_t>> kShapes7b = {
    {12288, 4096}, {4096, 4096}, {22016, 4096}, {4096, 11008}, {32000, 4096}};

TEST(GemmPolicy, NamesRoundTrip) {
  for (GemmPolicy p :
       {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat, GemmPolicy::kCublas}) {
    GemmPolicy q = GemmPolicy::kAuto;
    ASSERT_TRUE(parse_gemm_policy(gemm_policy_name(p), &q)) << gemm_policy_name(p);
    EXPECT_EQ(q, p);
  }
  GemmPolicy q = GemmPolicy::kGemv;
  EXPECT_TRUE(parse_gemm_policy("cublaslt", &q));
  EXPECT_EQ(q, GemmPolicy::kCublas);
  for (const char* bad : {"", "AUTO", "gemm", "flat ", "cuda"}) {
    q = GemmPolicy::kFlat;
    EXPECT_FALSE(parse_gemm_policy(bad, &q)) << bad;
    EXPECT_EQ(q, GemmPolicy::kFlat) << "a failed parse leaves the output alone";
  }
}

TEST(GemmPlan, ConfigTableIsConsistent) {
  ASSERT_GT(kFlatConfigCount, 0);
  for (int i = 0; i < kFlatConfigCount; ++i) {
    const FlatConfigDesc& c = kFlatConfigs[i];
    EXPECT_TRUE(flat_config_is_valid(c)) << c.name;
    EXPECT_TRUE(flat_config_named(i, c.name));
    EXPECT_GE(c.inflight_bytes(), 32 * 1024) << c.name << ": too few bytes in flight per CTA";
  }
  EXPECT_FALSE(flat_config_named(0, "nope"));
  EXPECT_FALSE(flat_config_named(kFlatConfigCount, kFlatConfigs[0].name));
  EXPECT_EQ(impl_choice_name({GemmImpl::kFlat, 0, 0}), std::string("flat:") + kFlatConfigs[0].name);
  EXPECT_EQ(impl_choice_name({GemmImpl::kGemv, -1, 4}), "gemv/s4");
  EXPECT_EQ(impl_choice_name({GemmImpl::kCublas, -1, 0}), "cublas");
  EXPECT_EQ(impl_choice_name({GemmImpl::kCublas, -1, 0, 2}), "cublas/a2");
}

TEST(GemmPlan, DefaultRuleAtTheMThresholds) {
  const GemmDeviceTraits t = h200();
  for (auto [n, k] : kShapes7b) {
    SCOPED_TRACE(::testing::Message() << "N " << n << " K " << k);
    for (int64_t m = 1; m <= 300; ++m) {
      const GemmPlan p = plan_gemm(prob(m, n, k), GemmPolicy::kAuto, nullptr, t);
      ASSERT_EQ(p.fallback, nullptr) << m;
      if (m <= kDefaultGemvMaxM) {
        EXPECT_EQ(p.choice.impl, GemmImpl::kGemv) << m;
      } else if (m <= kDefaultFlatMaxM) {
        ASSERT_EQ(p.choice.impl, GemmImpl::kFlat) << m;
        // The configuration with the fewest n8 tiles that still holds M.
        const FlatConfigDesc& c = kFlatConfigs[p.choice.config];
        EXPECT_GE(c.max_m(), m);
        EXPECT_LT(c.max_m() / 2, m) << c.name << " pads M = " << m << " more than needed";
      } else {
        EXPECT_EQ(p.choice.impl, GemmImpl::kCublas) << m;
      }
    }
  }
}

TEST(GemmPlan, ShapesTheKernelsCannotRunGoToCublas) {
  const GemmDeviceTraits t = h200();
  struct Case {
    GemmProblem p;
    const char* what;
  };
  const Case cases[] = {
      {prob(1, 4096, 4100), "K % 8 != 0"},
      {prob(3, 72, 4092), "K % 8 != 0"},
      {prob(8, 4096, 4096, DType::kF16, false), "misaligned x or w"},
      {prob(2, 4096, 4096, DType::kF32), "f32"},
      {prob(1, int64_t{1} << 32, 4096), "N beyond 32-bit indexing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // auto picks cuBLASLt outright; a forced policy falls back and says why.
    const GemmPlan a = plan_gemm(c.p, GemmPolicy::kAuto, nullptr, t);
    EXPECT_EQ(a.choice.impl, GemmImpl::kCublas);
    EXPECT_EQ(a.fallback, nullptr);
    for (GemmPolicy forced : {GemmPolicy::kGemv, GemmPolicy::kFlat}) {
      const GemmPlan f = plan_gemm(c.p, forced, nullptr, t);
      EXPECT_EQ(f.choice.impl, GemmImpl::kCublas) << gemm_policy_name(forced);
      EXPECT_NE(f.fallback, nullptr) << gemm_policy_name(forced);
    }
    EXPECT_NE(gemm_unsupported_reason(GemmImpl::kGemv, -1, c.p, t), nullptr);
    for (int i = 0; i < kFlatConfigCount; ++i)
      EXPECT_NE(gemm_unsupported_reason(GemmImpl::kFlat, i, c.p, t), nullptr) << i;
  }
  EXPECT_EQ(gemm_unsupported_reason(GemmImpl::kCublas, -1, prob(1, 4096, 4100), t), nullptr);
}

TEST(GemmPlan, ForcedPoliciesApplyWhereTheyCan) {
  const GemmDeviceTraits t = h200();
  for (int64_t m : {1, 4, 5, 8, 9, 16, 33, 64, 65, 128, 1024}) {
    SCOPED_TRACE(::testing::Message() << "M " << m);
    const GemmPlan c = plan_gemm(prob(m), GemmPolicy::kCublas, nullptr, t);
    EXPECT_EQ(c.choice.impl, GemmImpl::kCublas);
    EXPECT_EQ(c.fallback, nullptr);

    const GemmPlan g = plan_gemm(prob(m), GemmPolicy::kGemv, nullptr, t);
    if (m <= GemvConfig::kMaxM) {
      EXPECT_EQ(g.choice.impl, GemmImpl::kGemv);
      EXPECT_EQ(g.fallback, nullptr);
    } else {
      EXPECT_EQ(g.choice.impl, GemmImpl::kCublas);
      EXPECT_NE(g.fallback, nullptr);
    }

    const GemmPlan f = plan_gemm(prob(m), GemmPolicy::kFlat, nullptr, t);
    if (m <= kFlatMaxM) {
      EXPECT_EQ(f.choice.impl, GemmImpl::kFlat);
      EXPECT_EQ(f.choice.config, default_flat_config(prob(m), t));
      EXPECT_EQ(f.fallback, nullptr);
    } else {
      EXPECT_EQ(f.choice.impl, GemmImpl::kCublas);
      EXPECT_NE(f.fallback, nullptr);
    }
  }
  EXPECT_EQ(default_flat_config(prob(65), t), -1);
}

// A table that answers for one (N, K) only.
class OneShapeTable final : public GemmTable {
 public:
  OneShapeTable(int64_t n, int64_t k, ImplChoice c) : n_(n), k_(k), c_(c) {}
  std::optional<ImplChoice> lookup(int64_t, int64_t n, int64_t k, DType) const override {
    if (n == n_ && k == k_) return c_;
    return std::nullopt;
  }

 private:
  int64_t n_, k_;
  ImplChoice c_;
};

TEST(GemmPlan, InjectedTable) {
  const GemmDeviceTraits t = h200();
  const OneShapeTable flat3(4096, 4096, {GemmImpl::kFlat, 3, 2});
  // auto follows the table where it answers, the built-in rule elsewhere.
  GemmPlan p = plan_gemm(prob(2), GemmPolicy::kAuto, &flat3, t);
  EXPECT_EQ(p.choice, (ImplChoice{GemmImpl::kFlat, 3, 2}));
  p = plan_gemm(prob(2, 12288), GemmPolicy::kAuto, &flat3, t);
  EXPECT_EQ(p.choice.impl, default_gemm_choice(prob(2, 12288), t).impl);
  // --gemm flat takes the table's flat configuration; --gemm gemv ignores the table.
  p = plan_gemm(prob(7), GemmPolicy::kFlat, &flat3, t);
  EXPECT_EQ(p.choice.config, 3);
  p = plan_gemm(prob(2), GemmPolicy::kGemv, &flat3, t);
  EXPECT_EQ(p.choice.impl, GemmImpl::kGemv);
  // --gemm flat with a table entry that is not flat uses the built-in configuration.
  const OneShapeTable gemv(4096, 4096, {GemmImpl::kGemv, -1, 0});
  p = plan_gemm(prob(7), GemmPolicy::kFlat, &gemv, t);
  EXPECT_EQ(p.choice.impl, GemmImpl::kFlat);
  EXPECT_EQ(p.choice.config, default_flat_config(prob(7), t));
  // An entry that cannot run the call (gemv at M = 20) falls back, with the reason.
  p = plan_gemm(prob(20), GemmPolicy::kAuto, &gemv, t);
  EXPECT_EQ(p.choice.impl, GemmImpl::kCublas);
  EXPECT_NE(p.fallback, nullptr);
  // The same inputs give the same plan (graph safety).
  for (int i = 0; i < 3; ++i) {
    const GemmPlan a = plan_gemm(prob(2), GemmPolicy::kAuto, &flat3, t);
    EXPECT_EQ(a.choice, (ImplChoice{GemmImpl::kFlat, 3, 2}));
    EXPECT_EQ(a.k_split, plan_gemm(prob(2), GemmPolicy::kAuto, &flat3, t).k_split);
  }
}

// Every plan the kernels get tiles K exactly, fits the workspace and (ImplA)
// the shared-memory x slice.
void expect_valid_split(const GemmPlan& p, const GemmProblem& pr, const GemmDeviceTraits& t) {
  ASSERT_NE(p.choice.impl, GemmImpl::kCublas);
  const int64_t s = p.choice.splits;
  ASSERT_GE(s, 1);
  // kMaxSplitK, unless the GEMV's shared-memory x slice needs more.
  if (p.choice.impl == GemmImpl::kFlat ||
      pr.m * pr.k * 2 <= int64_t{kMaxSplitK} * GemvConfig::kMaxXBytes) {
    ASSERT_LE(s, kMaxSplitK);
  }
  EXPECT_EQ(p.k_split % 8, 0);
  EXPECT_GE(s * p.k_split, pr.k) << "the splits cover K";
  if (pr.k > 0) {
    EXPECT_LT((s - 1) * p.k_split, pr.k) << "no split is empty";
  }
  if (s > 1) {
    EXPECT_LE(s * pr.m * pr.n * 4, t.partial_bytes);
    EXPECT_LE(p.tiles, t.counters);
  }
  if (p.choice.impl == GemmImpl::kGemv) {
    EXPECT_LE(pr.m * p.k_split * 2, GemvConfig::kMaxXBytes);
    EXPECT_EQ(p.tiles, (pr.n + GemvConfig::kRowsPerCta - 1) / GemvConfig::kRowsPerCta);
  } else {
    const FlatConfigDesc& c = kFlatConfigs[p.choice.config];
    EXPECT_EQ(p.k_split % c.block_k, 0);
    EXPECT_EQ(p.tiles, (pr.n + c.block_n - 1) / c.block_n);
  }
}

TEST(GemmPlan, SplitKPlansTileKAndFitTheWorkspace) {
  const GemmDeviceTraits t = h200();
  std::vector<std::pair<int64_t, int64_t>> shapes = kShapes7b;
  shapes.insert(shapes.end(), {{72, 4096}, {5112, 520}, {4104, 4096}, {8, 8}, {27648, 5120},
                               {5120, 13824}, {100, 65536}});
  for (auto [n, k] : shapes) {
    for (int64_t m : {1, 2, 3, 5, 8, 9, 16, 17, 33, 64}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << " N " << n << " K " << k);
      const GemmProblem pr = prob(m, n, k);
      if (m <= GemvConfig::kMaxM)
        expect_valid_split(resolve_gemm_choice({GemmImpl::kGemv, -1, 0}, pr, t), pr, t);
      for (int c = 0; c < kFlatConfigCount; ++c) {
        if (m > kFlatConfigs[c].max_m()) continue;
        const GemmPlan p = resolve_gemm_choice({GemmImpl::kFlat, c, 0}, pr, t);
        ASSERT_EQ(p.fallback, nullptr) << kFlatConfigs[c].name;
        expect_valid_split(p, pr, t);
      }
    }
  }
}

TEST(GemmPlan, SplitKFillsTheGpuOnlyWhenNCannot) {
  const GemmDeviceTraits t = h200();
  // 72 rows are 5 GEMV tiles on 132 SMs: K must be split.
  EXPECT_GT(resolve_gemm_choice({GemmImpl::kGemv, -1, 0}, prob(1, 72, 4096), t).choice.splits, 1);
  // A flat tile of 64 rows gives 64 CTAs for N = 4096: split; 22016 rows give 344: barely.
  const int s_o = resolve_gemm_choice({GemmImpl::kFlat, 0, 0}, prob(8, 4096, 4096), t).choice.splits;
  const int s_ffn =
      resolve_gemm_choice({GemmImpl::kFlat, 0, 0}, prob(8, 22016, 4096), t).choice.splits;
  EXPECT_GT(s_o, 1);
  EXPECT_GE(s_o, s_ffn);
  // The cost model agrees with the planner's pick: no other split count is cheaper.
  for (auto [n, k] : kShapes7b) {
    const GemmProblem pr = prob(8, n, k);
    const GemmPlan p = resolve_gemm_choice({GemmImpl::kFlat, 0, 0}, pr, t);
    const double best = gemm_split_cost(GemmImpl::kFlat, 0, p.choice.splits, pr, t);
    ASSERT_GT(best, 0);
    for (int s = 1; s <= kMaxSplitK; ++s) {
      const double c = gemm_split_cost(GemmImpl::kFlat, 0, s, pr, t);
      if (c > 0) {
        EXPECT_GE(c, best) << "N " << n << " K " << k << " splits " << s;
      }
    }
  }
  EXPECT_LT(gemm_split_cost(GemmImpl::kCublas, -1, 1, prob(1), t), 0);
  EXPECT_LT(gemm_split_cost(GemmImpl::kGemv, -1, 1, prob(9), t), 0);
}

// The GEMV's split-K against the H200's timings of the counts the tuner sweeps (fdpp tune
// --json-out, Llama-2 7B and 13B shapes, M 1..8, medians of 4-6 timings; µs per call;
// docs/experiments/log.md, "test_gemm_dispatch.cpp: the GEMV split timings"): the planner's
// pick is one of the timed counts everywhere, the fastest at most points, never more than
// 10% off. (The cost model it replaced was the fastest at few of these points.)
struct GemvSplitTimings {
  int64_t n, k, m;
  std::vector<std::pair<int, double>> us;  // (splits, µs)
};
const GemvSplitTimings kH200GemvSplits[] = {
    {4096, 4096, 1, {{1, 12.14}, {2, 12.33}, {4, 14.22}}},
    {4096, 4096, 2, {{1, 12.04}, {2, 11.30}, {4, 14.63}}},
    {4096, 4096, 3, {{1, 12.38}, {2, 12.03}, {4, 15.22}}},
    {4096, 4096, 4, {{1, 13.34}, {2, 13.29}, {4, 14.45}}},
    {4096, 4096, 5, {{2, 14.40}, {3, 16.68}, {4, 15.77}, {8, 20.08}}},
    {4096, 4096, 6, {{2, 14.88}, {3, 16.18}, {4, 17.22}, {8, 21.00}}},
    {4096, 4096, 7, {{2, 16.47}, {3, 17.94}, {4, 18.69}, {8, 22.04}}},
    {4096, 4096, 8, {{2, 16.68}, {3, 18.34}, {4, 18.24}, {8, 21.09}}},
    {12288, 4096, 1, {{1, 25.28}, {2, 28.27}, {4, 30.06}}},
    {12288, 4096, 2, {{1, 27.17}, {2, 28.61}, {4, 32.55}}},
    {12288, 4096, 3, {{1, 29.23}, {2, 30.48}, {4, 35.49}}},
    {12288, 4096, 4, {{1, 30.02}, {2, 31.65}, {4, 33.56}}},
    {12288, 4096, 5, {{2, 35.69}, {3, 36.75}, {4, 38.43}, {8, 49.46}}},
    {12288, 4096, 6, {{2, 37.01}, {3, 38.92}, {4, 41.86}, {8, 52.77}}},
    {12288, 4096, 7, {{2, 41.50}, {3, 43.20}, {4, 46.38}, {8, 57.03}}},
    {12288, 4096, 8, {{2, 42.76}, {3, 43.58}, {4, 46.33}, {8, 53.93}}},
    {22016, 4096, 1, {{1, 42.26}, {2, 45.80}, {4, 48.02}}},
    {22016, 4096, 2, {{1, 43.50}, {2, 46.94}, {4, 52.03}}},
    {22016, 4096, 3, {{1, 45.28}, {2, 50.30}, {4, 58.37}}},
    {22016, 4096, 4, {{1, 47.18}, {2, 52.57}, {4, 57.50}}},
    {22016, 4096, 5, {{2, 59.43}, {3, 61.72}, {4, 64.88}, {8, 85.33}}},
    {22016, 4096, 6, {{2, 62.14}, {3, 66.38}, {4, 70.79}, {8, 91.50}}},
    {22016, 4096, 7, {{2, 70.01}, {3, 73.99}, {4, 78.92}, {8, 99.64}}},
    {22016, 4096, 8, {{2, 71.90}, {3, 75.03}, {4, 79.45}, {8, 93.67}}},
    {32000, 4096, 1, {{1, 60.69}, {2, 65.00}, {4, 69.12}}},
    {32000, 4096, 2, {{1, 61.53}, {2, 65.90}, {4, 72.50}}},
    {32000, 4096, 3, {{1, 63.42}, {2, 70.37}, {4, 81.74}}},
    {32000, 4096, 4, {{1, 66.15}, {2, 74.38}, {4, 82.83}}},
    {32000, 4096, 5, {{2, 83.38}, {3, 87.58}, {4, 92.28}, {8, 122.17}}},
    {32000, 4096, 6, {{2, 87.80}, {3, 94.21}, {4, 100.27}, {8, 131.13}}},
    {32000, 4096, 7, {{2, 100.15}, {3, 106.42}, {4, 113.18}, {8, 144.81}}},
    {32000, 4096, 8, {{2, 105.44}, {3, 109.30}, {4, 116.87}, {8, 138.26}}},
    {5120, 5120, 1, {{1, 19.08}, {2, 18.93}, {3, 18.76}, {5, 20.16}}},
    {5120, 5120, 2, {{1, 18.08}, {2, 17.43}, {3, 17.64}, {5, 20.10}}},
    {5120, 5120, 3, {{1, 18.20}, {2, 19.54}, {3, 18.20}, {5, 22.15}}},
    {5120, 5120, 4, {{2, 20.48}, {3, 18.04}, {5, 19.87}}},
    {5120, 5120, 5, {{2, 22.91}, {3, 20.85}, {4, 21.48}, {5, 22.91}}},
    {5120, 5120, 6, {{2, 24.38}, {3, 21.75}, {4, 22.23}, {5, 24.58}}},
    {5120, 5120, 7, {{3, 24.70}, {4, 24.51}, {5, 27.16}, {10, 31.97}}},
    {5120, 5120, 8, {{3, 25.48}, {4, 24.61}, {5, 26.95}, {10, 30.65}}},
    {15360, 5120, 1, {{1, 38.45}, {2, 41.13}, {3, 41.22}, {5, 44.19}}},
    {15360, 5120, 2, {{1, 39.46}, {2, 41.42}, {3, 42.76}, {5, 46.72}}},
    {15360, 5120, 3, {{1, 41.52}, {2, 43.98}, {3, 45.64}, {5, 51.33}}},
    {15360, 5120, 4, {{2, 45.47}, {3, 45.94}, {5, 49.32}}},
    {15360, 5120, 5, {{2, 50.37}, {3, 52.33}, {4, 54.91}, {5, 57.28}, {10, 75.42}}},
    {15360, 5120, 6, {{2, 55.25}, {3, 55.18}, {4, 57.69}, {5, 62.52}, {10, 80.87}}},
    {15360, 5120, 7, {{3, 61.98}, {4, 64.37}, {5, 69.49}, {10, 87.74}}},
    {15360, 5120, 8, {{3, 63.62}, {4, 64.85}, {5, 70.05}}},
    {27648, 5120, 1, {{1, 67.12}, {2, 69.21}, {3, 69.72}, {5, 73.74}}},
    {27648, 5120, 2, {{1, 68.79}, {2, 69.88}, {3, 72.97}, {5, 77.58}}},
    {27648, 5120, 3, {{1, 71.67}, {2, 73.89}, {3, 76.51}, {5, 86.58}}},
    {27648, 5120, 4, {{2, 77.02}, {3, 79.45}, {5, 87.65}}},
    {27648, 5120, 5, {{2, 86.47}, {3, 90.02}, {4, 94.86}, {5, 100.16}}},
    {27648, 5120, 6, {{2, 94.68}, {3, 95.66}, {4, 101.24}, {5, 108.50}}},
    {27648, 5120, 7, {{3, 108.22}, {4, 113.23}, {5, 120.98}}},
    {27648, 5120, 8, {{3, 110.74}, {4, 114.44}, {5, 122.65}}},
    {32000, 5120, 1, {{1, 75.77}, {2, 79.03}, {3, 80.41}, {5, 85.18}}},
    {32000, 5120, 2, {{1, 77.55}, {2, 80.08}, {3, 84.43}, {5, 89.13}}},
    {32000, 5120, 3, {{1, 81.44}, {2, 85.12}, {3, 89.18}, {5, 101.63}}},
    {32000, 5120, 4, {{2, 90.49}, {3, 94.66}, {5, 105.07}}},
    {32000, 5120, 5, {{2, 104.02}, {3, 109.40}, {4, 115.67}, {5, 121.61}}},
    {32000, 5120, 6, {{2, 118.52}, {3, 120.24}, {4, 127.35}, {5, 136.31}}},
    {32000, 5120, 7, {{3, 134.34}, {4, 141.26}, {5, 151.39}}},
    {32000, 5120, 8, {{3, 138.60}, {4, 142.99}, {5, 153.02}}},
    {4096, 11008, 1, {{1, 26.78}, {2, 26.20}, {3, 27.37}, {4, 26.12}, {6, 27.39}, {11, 30.99}}},
    {4096, 11008, 2, {{2, 25.08}, {3, 26.64}, {4, 25.01}, {6, 26.17}, {11, 30.25}}},
    {4096, 11008, 3, {{3, 28.46}, {4, 25.92}, {6, 27.34}, {11, 32.58}}},
    {4096, 11008, 4, {{3, 30.14}, {4, 27.44}, {6, 28.41}, {11, 31.32}}},
    {4096, 11008, 5, {{4, 30.19}, {6, 31.27}, {8, 32.17}, {11, 34.80}}},
    {4096, 11008, 6, {{5, 32.38}, {6, 32.47}, {8, 34.04}, {11, 37.64}}},
    {4096, 11008, 7, {{6, 37.00}, {8, 38.22}, {11, 41.99}}},
    {4096, 11008, 8, {{6, 38.09}, {8, 38.78}, {11, 41.85}}},
    {5120, 13824, 1, {{1, 46.30}, {2, 43.49}, {3, 37.14}, {4, 37.47}, {5, 38.36}, {7, 39.74}}},
    {5120, 13824, 2, {{2, 46.36}, {3, 38.40}, {4, 38.14}, {5, 39.10}, {7, 39.50}}},
    {5120, 13824, 3, {{3, 39.98}, {4, 38.94}, {5, 39.96}, {7, 40.91}}},
    {5120, 13824, 4, {{4, 40.52}, {5, 41.28}, {7, 42.02}}},
    {5120, 13824, 5, {{5, 46.25}, {6, 45.44}, {7, 47.59}, {9, 48.80}}},
    {5120, 13824, 6, {{6, 50.10}, {7, 49.64}, {9, 51.78}}},
    {5120, 13824, 7, {{7, 57.45}, {9, 59.20}}},
    {5120, 13824, 8, {{7, 58.82}, {9, 60.20}}},
};

TEST(GemmPlan, GemvSplitFollowsTheH200Timings) {
  const GemmDeviceTraits t = h200();
  int fastest = 0;
  for (const GemvSplitTimings& pt : kH200GemvSplits) {
    const GemmPlan p = resolve_gemm_choice({GemmImpl::kGemv, -1, 0}, prob(pt.m, pt.n, pt.k), t);
    double best = 1e30, mine = -1;
    for (auto [splits, us] : pt.us) {
      best = std::min(best, us);
      if (splits == p.choice.splits) mine = us;
    }
    const std::string where = "N " + std::to_string(pt.n) + " K " + std::to_string(pt.k) +
                              " M " + std::to_string(pt.m) + " splits " +
                              std::to_string(p.choice.splits);
    ASSERT_GT(mine, 0) << where << ": not a timed count";
    EXPECT_LE(mine, 1.10 * best) << where;
    fastest += mine == best;
  }
  EXPECT_GE(fastest, 66);
}

TEST(GemmPlan, GemvXSliceForcesSplits) {
  const GemmDeviceTraits t = h200();
  // M = 8 and K = 11008: the whole x slice (176 KB) cannot sit in 32 KB of smem.
  const GemmPlan p = resolve_gemm_choice({GemmImpl::kGemv, -1, 0}, prob(8, 32000, 11008), t);
  EXPECT_GE(p.choice.splits, 6);
  EXPECT_LE(8 * p.k_split * 2, GemvConfig::kMaxXBytes);
  // A huge K with no workspace left for the splits it needs: the GEMV cannot run it.
  GemmDeviceTraits small = t;
  small.partial_bytes = 1024;
  EXPECT_NE(gemm_unsupported_reason(GemmImpl::kGemv, -1, prob(8, 4096, 11008), small), nullptr);
  EXPECT_EQ(plan_gemm(prob(8, 4096, 11008), GemmPolicy::kGemv, nullptr, small).choice.impl,
            GemmImpl::kCublas);
}

TEST(GemmPlan, RequestedSplitsAreClampedToWhatIsValid) {
  const GemmDeviceTraits t = h200();
  // 32 k-blocks of 128: 3 requested → 11 blocks per split → 3 splits.
  GemmPlan p = resolve_gemm_choice({GemmImpl::kFlat, 0, 3}, prob(8), t);
  EXPECT_EQ(p.choice.splits, 3);
  EXPECT_EQ(p.k_split, 11 * 128);
  p = resolve_gemm_choice({GemmImpl::kFlat, 0, 100}, prob(8), t);
  EXPECT_EQ(p.choice.splits, kMaxSplitK);
  p = resolve_gemm_choice({GemmImpl::kFlat, 0, 9}, prob(8, 4096, 256), t);  // 2 k-blocks
  EXPECT_EQ(p.choice.splits, 2);
  // The workspace caps the count: 2 splits of (64, 32000) fp32 are 16 MB.
  GemmDeviceTraits small = t;
  small.partial_bytes = int64_t{64} * 32000 * 4 * 2;
  p = resolve_gemm_choice({GemmImpl::kFlat, 4, 8}, prob(64, 32000, 4096), small);
  EXPECT_LE(p.choice.splits, 2);
  expect_valid_split(p, prob(64, 32000, 4096), small);
}

TEST(GemmPlan, DegenerateShapes) {
  const GemmDeviceTraits t = h200();
  // Nothing to compute: no kernel, no complaint.
  for (GemmPolicy pol : {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat}) {
    EXPECT_EQ(plan_gemm(prob(0), pol, nullptr, t).choice.impl, GemmImpl::kCublas);
    EXPECT_EQ(plan_gemm(prob(0), pol, nullptr, t).fallback, nullptr);
    EXPECT_EQ(plan_gemm(prob(1, 0), pol, nullptr, t).fallback, nullptr);
  }
  // K = 0: y = bias (+ y), one split over nothing.
  const GemmPlan p = plan_gemm(prob(1, 4096, 0), GemmPolicy::kGemv, nullptr, t);
  EXPECT_EQ(p.choice.impl, GemmImpl::kGemv);
  EXPECT_EQ(p.choice.splits, 1);
  EXPECT_EQ(p.k_split, 0);
  // Unknown occupancy counts as one CTA per SM rather than dividing by zero.
  GemmDeviceTraits unknown;
  unknown.sm_count = 0;
  const GemmPlan q = plan_gemm(prob(3), GemmPolicy::kGemv, nullptr, unknown);
  EXPECT_EQ(q.choice.impl, GemmImpl::kGemv);
  EXPECT_GE(q.choice.splits, 1);
}

TEST(GemmPlan, ConfigsThatDoNotFitAreNeverPlanned) {
  GemmDeviceTraits t = h200();
  t.flat_ctas_per_sm[0] = -1;  // as on a GPU with too little shared memory for it
  for (int64_t m : {5, 8}) {
    const GemmPlan p = plan_gemm(prob(m), GemmPolicy::kFlat, nullptr, t);
    ASSERT_EQ(p.choice.impl, GemmImpl::kFlat);
    EXPECT_NE(p.choice.config, 0) << "the other M <= 8 configuration serves it";
  }
  EXPECT_NE(resolve_gemm_choice({GemmImpl::kFlat, 0, 0}, prob(8), t).fallback, nullptr);
  t.flat_ctas_per_sm[4] = -1;  // the only M <= 64 configuration
  EXPECT_EQ(plan_gemm(prob(40), GemmPolicy::kAuto, nullptr, t).choice.impl, GemmImpl::kCublas);
  const GemmPlan f = plan_gemm(prob(40), GemmPolicy::kFlat, nullptr, t);
  EXPECT_EQ(f.choice.impl, GemmImpl::kCublas);
  EXPECT_NE(f.fallback, nullptr);
  t.gemv_ctas_per_sm[1] = -1;  // the GEMV of M = 2 does not fit: forced, it falls back
  const GemmPlan g = plan_gemm(prob(2), GemmPolicy::kGemv, nullptr, t);
  EXPECT_EQ(g.choice.impl, GemmImpl::kCublas);
  EXPECT_NE(g.fallback, nullptr);
}

}  // namespace
}  // namespace fdpp
