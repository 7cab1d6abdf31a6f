// The tuned GEMM dispatch table (backend/gemm_table.h), in CI: the table derived from
// synthetic timings (fastest per M, ties, non-monotone winners, a shape GEMV never
// wins), M1 / M2, lookups at the boundaries and between tuned M, regret, the JSON file
// (round trip, every malformed case a clear error, another GPU or dtype refused),
// missing shapes falling back to the built-in rule, merging, the cache directory's
// precedence and the built-in defaults.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend/gemm_plan.h"
#include "backend/gemm_table.h"
#include "common/test_util.h"
#include "fdpp/engine.h"
#include "runtime/gemm_table_setup.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

const GpuIdentity kH200{"NVIDIA H200", 132, 9, 0, 13000};

constexpr ImplChoice kGemv{GemmImpl::kGemv, -1, 0};
constexpr ImplChoice kCublas{GemmImpl::kCublas, -1, 0};
constexpr ImplChoice kCublasAlgo2{GemmImpl::kCublas, -1, 0, 2};  // the heuristic's third answer
constexpr ImplChoice flat(int config, int splits = 0) { return {GemmImpl::kFlat, config, splits}; }

// The tuner's M sweep: dense to 64, then sparse.
std::vector<int> sweep_ms() {
  std::vector<int> ms;
  for (int m = 1; m <= 64; ++m) ms.push_back(m);
  for (int m : {80, 96, 112, 128, 160, 192, 256, 320, 384, 448, 512}) ms.push_back(m);
  return ms;
}

// Timings of every implementation that can run each M (GEMV up to 8, a flat
// configuration up to its n8 tiles, cuBLASLt always), from a cost model; a model
// returning <= 0 leaves that run out.
using CostModel = std::function<double(const ImplChoice&, int m)>;
void add_sweep(std::vector<GemmTiming>& out, const std::string& name, int64_t n, int64_t k,
               const CostModel& cost, const std::vector<int>& ms = sweep_ms()) {
  for (int m : ms) {
    std::vector<ImplChoice> run;
    if (m <= GemvConfig::kMaxM) run.push_back(kGemv);
    for (int c = 0; c < kFlatConfigCount; ++c)
      if (m <= kFlatConfigs[c].max_m()) run.push_back(flat(c));
    run.push_back(kCublas);
    for (const ImplChoice& c : run) {
      const double us = cost(c, m);
      if (us > 0) out.push_back({name, n, k, m, c, true, us});
    }
  }
}

// A plausible shape: GEMV cheapest to M = 4, flat configurations to M = 49,
// cuBLASLt above (flat m64 is 25 + 0.2 M, cuBLASLt 30 + 0.1 M: they cross at 50).
double plausible(const ImplChoice& c, int m) {
  switch (c.impl) {
    case GemmImpl::kGemv: return 10.0 + 2.0 * m;         // 12 .. 26
    case GemmImpl::kFlat:
      switch (c.config) {
        case 0: return 19.0;                             // M <= 8
        case 1: return 19.5;                             // M <= 8
        case 2: return 21.0;                             // M <= 16
        case 3: return 23.0 + 0.05 * m;                  // M <= 32
        default: return 25.0 + 0.2 * m + (m == 50 ? 0.01 : 0.0);  // M <= 64
      }
    case GemmImpl::kCublas: return 30.0 + 0.1 * m;
  }
  return -1;
}

TunedGemmTable derive_ok(const std::vector<GemmTiming>& t, DType dt = DType::kF16) {
  auto table = derive_gemm_table(t, kH200, dt);
  EXPECT_TRUE(table.ok()) << table.status().message();
  return table.ok() ? std::move(table).value() : TunedGemmTable{};
}

// ---- near ties the decode step settles ------------------------------------------------

TEST(GemmTable, StepTiesAreImplementationsWithinTheMarginAtOneM) {
  constexpr ImplChoice kGemvS4{GemmImpl::kGemv, -1, 4};
  constexpr ImplChoice kGemvS1{GemmImpl::kGemv, -1, 1};
  std::vector<GemmTiming> t = {
      // down-like: the fused GEMV (best split 4) and cuBLASLt within 3%; flat far behind.
      {"down", 4096, 11008, 1, kGemvS1, false, 34.1},
      {"down", 4096, 11008, 1, kGemvS4, false, 28.5},
      {"down", 4096, 11008, 1, kCublas, true, 29.2},
      {"down", 4096, 11008, 1, flat(0), true, 39.1},
      {"down", 4096, 11008, 2, kCublas, true, 20.0},  // another M: not looked at
      // o-like: cuBLASLt 20% behind the GEMV: no tie.
      {"o", 4096, 4096, 1, kGemv, true, 10.0},
      {"o", 4096, 4096, 1, kCublas, true, 12.0},
      // lm_head-like: cuBLASLt fastest, the GEMV 5% behind, flat 9.9% behind.
      {"lm_head", 32000, 4096, 1, kGemv, true, 63.0},
      {"lm_head", 32000, 4096, 1, kCublas, true, 60.0},
      {"lm_head", 32000, 4096, 1, flat(2), true, 65.94},
  };
  const std::vector<GemmStepTie> ties = gemm_step_ties(t, 1);
  ASSERT_EQ(ties.size(), 2u);
  EXPECT_EQ(ties[0].shape, "down");
  EXPECT_EQ(ties[0].m, 1);
  ASSERT_EQ(ties[0].options.size(), 2u);
  EXPECT_EQ(ties[0].options[0].choice, kGemvS4);  // each implementation's fastest variant, fastest first
  EXPECT_EQ(ties[0].options[1].choice, kCublas);
  EXPECT_DOUBLE_EQ(ties[0].options[0].us, 28.5);
  EXPECT_EQ(ties[1].shape, "lm_head");
  ASSERT_EQ(ties[1].options.size(), 3u);
  EXPECT_EQ(ties[1].options[0].choice, kCublas);
  EXPECT_EQ(ties[1].options[1].choice, kGemv);
  EXPECT_EQ(ties[1].options[2].choice, flat(2));
  // A 2% margin leaves no tie: down's cuBLASLt is 2.5% behind, lm_head's GEMV 5%.
  const std::vector<GemmStepTie> tight = gemm_step_ties(t, 1, 0.02);
  ASSERT_EQ(tight.size(), 0u);
  EXPECT_TRUE(gemm_step_ties(t, 3).empty());  // nothing measured there
}

TEST(GemmTable, WithGemmChoiceChangesExactlyOneM) {
  auto made = TunedGemmTable::create(
      kH200, DType::kF16,
      {{"qkv", 12288, 4096, {{2, kGemv, 26.0}, {4, flat(0), 27.0}, {512, kCublas, 70.0}}}});
  ASSERT_TRUE(made.ok()) << made.status().message();
  const TunedGemmTable& base = *made;
  auto at = [](const TunedGemmTable& t, int64_t m) { return t.lookup(m, 12288, 4096, DType::kF16); };

  auto one = with_gemm_choice(base, 12288, 4096, 1, kCublas, 29.0);  // inserted before M 2
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(at(*one, 1), kCublas);
  EXPECT_EQ(at(*one, 2), kGemv);
  EXPECT_EQ(at(*one, 3), flat(0));
  EXPECT_DOUBLE_EQ(one->shapes()[0].entries[0].us, 29.0);

  auto two = with_gemm_choice(base, 12288, 4096, 2, kCublas, 0.0);  // replaces the entry at 2
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(at(*two, 1), kCublas);  // (0, 2] is one entry: M 1 and 2 change together
  EXPECT_EQ(at(*two, 3), flat(0));

  auto three = with_gemm_choice(base, 12288, 4096, 3, kGemv, 0.0);  // inserted after M 2
  ASSERT_TRUE(three.ok()) << three.status().message();
  EXPECT_EQ(at(*three, 2), kGemv);
  EXPECT_EQ(at(*three, 3), kGemv);
  EXPECT_EQ(at(*three, 4), flat(0));

  // M 6 has no entry at 5 or 6 (the entry at 512 serves 5..512): an entry at 6 would hand
  // 5 and 6 the new choice together, so it is refused, as is an unknown shape.
  EXPECT_FALSE(with_gemm_choice(base, 12288, 4096, 6, kGemv, 0.0).ok());
  EXPECT_FALSE(with_gemm_choice(base, 4096, 4096, 1, kGemv, 0.0).ok());
  EXPECT_EQ(at(base, 1), kGemv);  // the original is untouched
}

TEST(GemmTable, StepTiesSettledByTheStepTime) {
  constexpr ImplChoice kGemvS4{GemmImpl::kGemv, -1, 4};
  auto made = TunedGemmTable::create(
      kH200, DType::kF16,
      {{"down", 4096, 11008, {{1, kCublas, 29.2}, {2, kGemvS4, 25.0}, {512, kCublas, 70.0}}},
       {"lm_head", 32000, 4096, {{3, kGemv, 61.0}, {512, kCublas, 220.0}}}});
  ASSERT_TRUE(made.ok()) << made.status().message();
  GemmTableTune tune;
  tune.table = *made;
  tune.ties = {{"down", 4096, 11008, 1, {{kCublas, 29.2}, {kGemvS4, 29.8}}},
               {"lm_head", 32000, 4096, 1, {{kGemv, 61.0}, {kCublas, 62.0}}}};
  // A step model: the fused GEMV for down saves 0.14 ms, cuBLASLt for lm_head costs 0.01 ms
  // more, but only when down already runs the GEMV (so the order of settling shows).
  std::vector<std::pair<ImplChoice, ImplChoice>> seen;
  const GemmStepTimer step = [&](const TunedGemmTable& t) -> Result<double> {
    const ImplChoice down = *t.lookup(1, 4096, 11008, DType::kF16);
    const ImplChoice head = *t.lookup(1, 32000, 4096, DType::kF16);
    seen.emplace_back(down, head);
    double ms = 3.83 + (down == kCublas ? 0.14 : 0.0);
    if (head == kCublas) ms += down == kGemvS4 ? 0.01 : -0.05;
    return ms;
  };
  auto settled = settle_gemm_step_ties(tune, step);
  ASSERT_TRUE(settled.ok()) << settled.status().message();
  EXPECT_EQ(settled->lookup(1, 4096, 11008, DType::kF16), kGemvS4);
  EXPECT_EQ(settled->lookup(2, 4096, 11008, DType::kF16), kGemvS4);  // untouched
  EXPECT_EQ(settled->lookup(1, 32000, 4096, DType::kF16), kGemv);    // timed with down settled
  EXPECT_EQ(settled->lookup(2, 32000, 4096, DType::kF16), kGemv);
  ASSERT_EQ(seen.size(), 8u);  // two ties × two choices × two rounds, in turn
  EXPECT_EQ(seen[0].first, kCublas);
  EXPECT_EQ(seen[1].first, kGemvS4);
  EXPECT_EQ(seen[2].first, kCublas);
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(seen[i].first, kGemvS4);

  // A step that fails fails the settling, with its error.
  const GemmStepTimer broken = [](const TunedGemmTable&) -> Result<double> {
    return Internal("the step failed");
  };
  auto failed = settle_gemm_step_ties(tune, broken);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("the step failed"), std::string::npos);
}

// ---- derivation and thresholds ---------------------------------------------------------

TEST(GemmTable, DerivesFastestPerMAndThresholds) {
  std::vector<GemmTiming> t;
  add_sweep(t, "o", 4096, 4096, plausible);
  const TunedGemmTable table = derive_ok(t);
  ASSERT_EQ(table.shapes().size(), 1u);
  const GemmTableShape& s = table.shapes()[0];
  EXPECT_EQ(s.name, "o");
  EXPECT_EQ(s.entries.size(), sweep_ms().size());
  const GemmThresholds th = gemm_thresholds(table, s);
  EXPECT_EQ(th.m1, 4);
  EXPECT_EQ(th.m2, 49);
  EXPECT_TRUE(th.monotone);
  // Per M, the fastest: config 0 (19.0) over config 1 (19.5) up to 8, then m16 (21), ...
  auto at = [&](int64_t m) { return table.lookup(m, 4096, 4096, DType::kF16); };
  EXPECT_EQ(at(1), kGemv);
  EXPECT_EQ(at(4), kGemv);       // M1
  EXPECT_EQ(at(5), flat(0));     // M1 + 1: 20 (GEMV) > 19
  EXPECT_EQ(at(8), flat(0));
  EXPECT_EQ(at(9), flat(2));
  EXPECT_EQ(at(16), flat(2));
  EXPECT_EQ(at(17), flat(3));    // 23.85 < 28.4 (m64)
  EXPECT_EQ(at(33), flat(4));
  EXPECT_EQ(at(49), flat(4));    // M2: 34.8 < 34.9
  EXPECT_EQ(at(50), kCublas);    // M2 + 1
  EXPECT_EQ(at(64), kCublas);
  EXPECT_EQ(at(512), kCublas);   // the largest tuned M
  // The entry remembers what it measured.
  EXPECT_DOUBLE_EQ(s.entries[0].us, 12.0);
}

TEST(GemmTable, TiesGoToTheSimplerKernel) {
  std::vector<GemmTiming> t = {
      // M = 1: GEMV and flat tie → GEMV.
      {"x", 4096, 4096, 1, kGemv, true, 10.0},
      {"x", 4096, 4096, 1, flat(0), true, 10.0},
      // M = 2: two flat configurations and cuBLASLt tie → the lower configuration index.
      {"x", 4096, 4096, 2, kCublas, true, 11.0},
      {"x", 4096, 4096, 2, flat(1), true, 11.0},
      {"x", 4096, 4096, 2, flat(0), true, 11.0},
      // M = 3: the same configuration at two split counts → fewer splits.
      {"x", 4096, 4096, 3, flat(2, 4), false, 12.0},
      {"x", 4096, 4096, 3, flat(2, 2), true, 12.0},
      // M = 4: flat and cuBLASLt tie → flat.
      {"x", 4096, 4096, 4, kCublas, true, 13.0},
      {"x", 4096, 4096, 4, flat(4), true, 13.0},
  };
  const TunedGemmTable table = derive_ok(t);
  EXPECT_EQ(table.lookup(1, 4096, 4096, DType::kF16), kGemv);
  EXPECT_EQ(table.lookup(2, 4096, 4096, DType::kF16), flat(0));
  EXPECT_EQ(table.lookup(3, 4096, 4096, DType::kF16), flat(2, 2));
  EXPECT_EQ(table.lookup(4, 4096, 4096, DType::kF16), flat(4));
  // The same measurements in another order give the same table.
  std::vector<GemmTiming> r(t.rbegin(), t.rend());
  const TunedGemmTable again = derive_ok(r);
  EXPECT_EQ(serialize_gemm_table(again), serialize_gemm_table(table));
}

TEST(GemmTable, NonMonotoneWinnersStayPerM) {
  // GEMV, GEMV, flat, GEMV, then flat, and cuBLASLt once at 6 before flat again at 7.
  const std::vector<std::pair<int, ImplChoice>> winners = {
      {1, kGemv}, {2, kGemv}, {3, flat(0)}, {4, kGemv}, {5, flat(0)},
      {6, kCublas}, {7, flat(1)}, {8, kCublas}};
  std::vector<GemmTiming> t;
  for (const auto& [m, w] : winners)
    for (const ImplChoice& c : {kGemv, flat(0), flat(1), kCublas})
      t.push_back({"x", 8192, 4096, m, c, true, c == w ? 5.0 : 6.0 + m});
  const TunedGemmTable table = derive_ok(t);
  for (const auto& [m, w] : winners) EXPECT_EQ(table.lookup(m, 8192, 4096, DType::kF16), w) << m;
  const GemmThresholds th = gemm_thresholds(table, table.shapes()[0]);
  EXPECT_EQ(th.m1, 4);  // the last GEMV win
  EXPECT_EQ(th.m2, 7);  // the last GEMV-or-flat win
  EXPECT_FALSE(th.monotone);
}

TEST(GemmTable, ShapeWhereGemvNeverWins) {
  std::vector<GemmTiming> t;
  add_sweep(t, "lm_head", 32000, 4096, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kGemv ? plausible(c, m) + 100.0 : plausible(c, m);
  });
  const TunedGemmTable table = derive_ok(t);
  const GemmThresholds th = gemm_thresholds(table, table.shapes()[0]);
  EXPECT_EQ(th.m1, 0);
  EXPECT_EQ(th.m2, 49);
  EXPECT_TRUE(th.monotone);
  EXPECT_EQ(table.lookup(1, 32000, 4096, DType::kF16), flat(0));
}

TEST(GemmTable, CublasEverywhere) {
  std::vector<GemmTiming> t;
  add_sweep(t, "x", 1024, 1024, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kCublas ? 1.0 : 2.0;
  });
  const TunedGemmTable table = derive_ok(t);
  const GemmThresholds th = gemm_thresholds(table, table.shapes()[0]);
  EXPECT_EQ(th.m1, 0);
  EXPECT_EQ(th.m2, 0);
  EXPECT_EQ(table.lookup(1, 1024, 1024, DType::kF16), kCublas);
}

TEST(GemmTable, SharedShapesMergeNamesAndBadTimingsAreIgnored) {
  std::vector<GemmTiming> t = {
      {"o", 4096, 4096, 1, kGemv, true, 10.0},
      {"down_proj_like", 4096, 4096, 1, flat(0), true, 11.0},
      {"o", 4096, 4096, 2, kGemv, true, 0.0},                     // not a time
      {"o", 4096, 4096, 2, flat(0), true, -1.0},                  // not a time
      {"o", 4096, 4096, 2, flat(99), true, 1.0},                  // no such configuration
      {"o", 4096, 4096, 2, kCublas, true, 20.0},
      {"o", 4096, 4096, 3, kGemv, true, std::numeric_limits<double>::quiet_NaN()},
  };
  const TunedGemmTable table = derive_ok(t);
  ASSERT_EQ(table.shapes().size(), 1u);
  EXPECT_EQ(table.shapes()[0].name, "o,down_proj_like");
  ASSERT_EQ(table.shapes()[0].entries.size(), 2u);  // M = 3 had no usable timing
  EXPECT_EQ(table.lookup(2, 4096, 4096, DType::kF16), kCublas);

  EXPECT_FALSE(derive_gemm_table({}, kH200, DType::kF16).ok());
  EXPECT_FALSE(derive_gemm_table({{"o", 4096, 4096, 1, kGemv, true, 0.0}}, kH200, DType::kF16).ok());
  EXPECT_FALSE(derive_gemm_table({{"o", 4096, 4096, 1, kGemv, true, 1.0}}, kH200, DType::kF32).ok());
}

// ---- lookups --------------------------------------------------------------------------

TEST(GemmTable, LookupBoundaries) {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, plausible);
  add_sweep(t, "o", 4096, 4096, plausible, {1, 2, 4, 8, 16, 32, 48});  // sparse, ends on flat
  const TunedGemmTable table = derive_ok(t);
  const GemmThresholds th = gemm_thresholds(table, *table.find(12288, 4096));
  ASSERT_EQ(th.m1, 4);
  ASSERT_EQ(th.m2, 49);
  auto qkv = [&](int64_t m) { return table.lookup(m, 12288, 4096, DType::kF16); };
  EXPECT_EQ(qkv(1), kGemv);
  EXPECT_EQ(qkv(th.m1), kGemv);
  EXPECT_EQ(qkv(th.m1 + 1), flat(0));
  EXPECT_EQ(qkv(th.m2), flat(4));
  EXPECT_EQ(qkv(th.m2 + 1), kCublas);
  EXPECT_EQ(qkv(512), kCublas);
  // Beyond the largest tuned M: cuBLASLt won there, so it serves every larger M.
  EXPECT_EQ(qkv(513), kCublas);
  EXPECT_EQ(qkv(1 << 20), kCublas);
  // Untuned M between tuned ones: the next tuned M above.
  EXPECT_EQ(qkv(70), qkv(80));
  EXPECT_EQ(qkv(500), qkv(512));
  // Nothing for M < 1, another dtype, another shape or nonsense N, K.
  EXPECT_EQ(qkv(0), std::nullopt);
  EXPECT_EQ(qkv(-3), std::nullopt);
  EXPECT_EQ(table.lookup(1, 12288, 4096, DType::kBF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, 12288, 4097, DType::kF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, int64_t{1} << 40, 4096, DType::kF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, 0, 0, DType::kF16), std::nullopt);

  // "o" was tuned at 1, 2, 4, 8, 16, 32, 48: M = 3 takes M = 4's GEMV, M = 9..16 take 16's
  // m16 tile, which holds them; past 48 (a flat win) the table has nothing to say.
  auto o = [&](int64_t m) { return table.lookup(m, 4096, 4096, DType::kF16); };
  EXPECT_EQ(o(3), kGemv);
  EXPECT_EQ(o(5), flat(0));
  EXPECT_EQ(o(9), flat(2));
  EXPECT_EQ(o(17), flat(3));
  EXPECT_EQ(o(40), flat(4));
  EXPECT_EQ(o(48), flat(4));
  EXPECT_EQ(o(49), std::nullopt);
  EXPECT_EQ(gemm_thresholds(table, *table.find(4096, 4096)).m2, 48);
}

TEST(GemmTable, MissingShapeFallsBackToTheBuiltInRule) {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kCublas ? 1.0 : 2.0;  // a table that says cuBLASLt everywhere
  });
  const TunedGemmTable table = derive_ok(t);
  GemmDeviceTraits traits;
  traits.sm_count = 132;
  for (int m = 1; m <= GemvConfig::kMaxM; ++m) traits.gemv_ctas_per_sm[m - 1] = 3;
  for (int c = 0; c < kFlatConfigCount; ++c) traits.flat_ctas_per_sm[c] = 2;
  for (int64_t m : {1, 4, 5, 64, 65, 300}) {
    // The tuned shape follows the table ...
    const GemmPlan tuned = plan_gemm({m, 12288, 4096, DType::kF16, true}, GemmPolicy::kAuto,
                                     &table, traits);
    EXPECT_EQ(tuned.choice.impl, GemmImpl::kCublas) << m;
    // ... a shape it lacks plans exactly as with no table.
    const GemmProblem p{m, 4096, 11008, DType::kF16, true};
    EXPECT_EQ(plan_gemm(p, GemmPolicy::kAuto, &table, traits).choice,
              plan_gemm(p, GemmPolicy::kAuto, nullptr, traits).choice)
        << m;
  }
}

// ---- regret ---------------------------------------------------------------------------

// The worst point of a verification pass, read against the pass the table came from: the
// table's GEMV held its time while cuBLASLt sped up (what fdpp tune prints under the table).
TEST(GemmTable, RegretPointAcrossPasses) {
  const ImplChoice gemv_s2{GemmImpl::kGemv, -1, 2};
  const std::vector<GemmTiming> pass1 = {{"x", 64, 64, 2, gemv_s2, false, 68.5},
                                         {"x", 64, 64, 2, kGemv, true, 70.0},
                                         {"x", 64, 64, 2, kCublas, true, 72.3}};
  const std::vector<GemmTiming> pass2 = {{"x", 64, 64, 2, gemv_s2, false, 68.6},
                                         {"x", 64, 64, 2, kGemv, true, 70.1},
                                         {"x", 64, 64, 2, kCublas, true, 65.4},
                                         {"x", 64, 64, 3, kCublas, true, 1.0}};
  const TunedGemmTable table = derive_ok(pass1);
  const std::optional<ImplChoice> choice = table.lookup(2, 64, 64, DType::kF16);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(*choice, gemv_s2);
  const std::optional<GemmRegretPoint> p = gemm_regret_point(pass2, 64, 64, 2, *choice);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->choice, gemv_s2);
  EXPECT_EQ(p->choice_us, 68.6);
  EXPECT_EQ(p->best, kCublas);
  EXPECT_EQ(p->best_us, 65.4);
  EXPECT_EQ(measured_us(pass1, 64, 64, 2, p->best), 72.3);
  EXPECT_EQ(measured_us(pass1, 64, 64, 2, kGemv), 70.0);  // split 0: the planner's run only
  // Its own best: both sides are the choice. Not measured there: nothing to print.
  const std::optional<GemmRegretPoint> own = gemm_regret_point(pass1, 64, 64, 2, gemv_s2);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->best_us, own->choice_us);
  EXPECT_FALSE(gemm_regret_point(pass2, 64, 64, 3, kGemv).has_value());
  EXPECT_FALSE(measured_us(pass2, 64, 64, 4, kCublas).has_value());
}

TEST(GemmTable, Regret) {
  std::vector<GemmTiming> pass1;
  add_sweep(pass1, "o", 4096, 4096, plausible);
  const TunedGemmTable table = derive_ok(pass1);
  // On its own measurements the table is the best at every M.
  const std::vector<GemmShapeReport> own = report_gemm_table(table, pass1);
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].table.max, 0.0);
  EXPECT_EQ(own[0].table.points, static_cast<int>(sweep_ms().size()));
  EXPECT_EQ(own[0].table.unmeasured, 0);
  EXPECT_EQ(own[0].thresholds.m1, 4);

  // A second pass where config 1 beats the table's config 0 by 5% at M = 7, and cuBLASLt
  // beats the table's flat m64 by 2% at M = 40.
  std::vector<GemmTiming> pass2;
  add_sweep(pass2, "o", 4096, 4096, [](const ImplChoice& c, int m) {
    if (m == 7 && c == flat(1)) return 19.0 / 1.05;
    if (m == 40 && c == kCublas) return (25.0 + 0.2 * 40) / 1.02;
    return plausible(c, m);
  });
  const GemmShapeReport r = report_gemm_table(table, pass2)[0];
  EXPECT_NEAR(r.table.max, 0.05, 1e-9);
  EXPECT_EQ(r.table.worst_m, 7);
  EXPECT_EQ(r.table.points, static_cast<int>(sweep_ms().size()));
  EXPECT_NEAR(r.table.mean, (0.05 + 0.02) / sweep_ms().size(), 1e-9);
  // M1 / M2 alone picks the fastest of each implementation in the pass it is given.
  EXPECT_NEAR(r.two_point.max, 0.02, 1e-9);
  EXPECT_EQ(r.two_point.worst_m, 40);

  // A rule that names something not measured at an M is counted, not scored.
  const GemmRegret g = gemm_regret(pass2, 4096, 4096, [](int m) -> std::optional<ImplChoice> {
    if (m > 8) return std::nullopt;
    return kGemv;
  });
  EXPECT_EQ(g.points, 8);
  EXPECT_EQ(g.unmeasured, static_cast<int>(sweep_ms().size()) - 8);
  // GEMV at M = 8: 26 vs the best 19 (config 0).
  EXPECT_NEAR(g.max, 26.0 / 19.0 - 1.0, 1e-9);
  EXPECT_EQ(g.worst_m, 8);
  // A split-K request matches only that split; 0 matches the planner's own run.
  std::vector<GemmTiming> splits = {{"x", 64, 64, 1, flat(0, 2), true, 10.0},
                                    {"x", 64, 64, 1, flat(0, 4), false, 12.0}};
  EXPECT_NEAR(gemm_regret(splits, 64, 64, [](int) { return flat(0, 4); }).max, 0.2, 1e-9);
  EXPECT_EQ(gemm_regret(splits, 64, 64, [](int) { return flat(0); }).max, 0.0);
  EXPECT_EQ(gemm_regret(splits, 64, 64, [](int) { return flat(0, 3); }).unmeasured, 1);
  // A cuBLASLt choice matches only the heuristic answer it names.
  std::vector<GemmTiming> algos = {{"x", 64, 64, 1, kCublas, true, 12.0},
                                   {"x", 64, 64, 1, kCublasAlgo2, true, 10.0}};
  EXPECT_NEAR(gemm_regret(algos, 64, 64, [](int) { return kCublas; }).max, 0.2, 1e-9);
  EXPECT_EQ(gemm_regret(algos, 64, 64, [](int) { return kCublasAlgo2; }).max, 0.0);
  EXPECT_EQ(gemm_regret(algos, 64, 64, [](int) {
              return ImplChoice{GemmImpl::kCublas, -1, 0, 1};
            }).unmeasured,
            1);
  EXPECT_EQ(derive_ok(algos).lookup(1, 64, 64, DType::kF16), kCublasAlgo2);
  // Within kCublasAlgoMargin of the library's own pick, the pick stays; a GEMV faster than
  // both still wins.
  std::vector<GemmTiming> close = {{"x", 64, 64, 1, kCublas, true, 10.15},
                                   {"x", 64, 64, 1, kCublasAlgo2, true, 10.0},
                                   {"x", 64, 64, 2, kCublas, true, 10.15},
                                   {"x", 64, 64, 2, kCublasAlgo2, true, 10.0},
                                   {"x", 64, 64, 2, kGemv, true, 9.0}};
  const TunedGemmTable picked = derive_ok(close);
  EXPECT_EQ(picked.lookup(1, 64, 64, DType::kF16), kCublas);
  EXPECT_DOUBLE_EQ(picked.shapes()[0].entries[0].us, 10.15);
  EXPECT_EQ(picked.lookup(2, 64, 64, DType::kF16), kGemv);
}

// ---- the file ----------------------------------------------------------------------------

TunedGemmTable two_shape_table() {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, plausible);
  add_sweep(t, "down", 4096, 11008, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kFlat && c.config == 1 ? 1.0 : plausible(c, m);
  });
  t.push_back({"down", 4096, 11008, 3, flat(1, 6), false, 0.5});  // a swept split wins at 3
  t.push_back({"qkv", 12288, 4096, 512, kCublasAlgo2, true, 1.0});  // cuBLASLt's third answer
  TunedGemmTable table = derive_ok(t, DType::kBF16);
  table.created = "2026-12-01 10:00 UTC";
  table.models = {"/models/Llama-2-7b", "/models/with \"quotes\""};
  return table;
}

TEST(GemmTable, JsonRoundTrip) {
  const TunedGemmTable a = two_shape_table();
  const std::string text = serialize_gemm_table(a);
  auto b = parse_gemm_table(text, "test");
  ASSERT_TRUE(b.ok()) << b.status().message() << "\n" << text;
  EXPECT_EQ(b->gpu(), kH200);
  EXPECT_EQ(b->dtype(), DType::kBF16);
  EXPECT_EQ(b->created, a.created);
  EXPECT_EQ(b->models, a.models);
  ASSERT_EQ(b->shapes().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const GemmTableShape &x = a.shapes()[i], &y = b->shapes()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.n, y.n);
    EXPECT_EQ(x.k, y.k);
    ASSERT_EQ(x.entries.size(), y.entries.size());
    for (size_t e = 0; e < x.entries.size(); ++e) {
      EXPECT_EQ(x.entries[e].m, y.entries[e].m);
      EXPECT_EQ(x.entries[e].choice, y.entries[e].choice) << x.name << " M " << x.entries[e].m;
      EXPECT_NEAR(x.entries[e].us, y.entries[e].us, 1e-3);
    }
    for (int64_t m = 0; m <= 600; ++m)
      EXPECT_EQ(a.lookup(m, x.n, x.k, DType::kBF16), b->lookup(m, x.n, x.k, DType::kBF16)) << m;
  }
  EXPECT_EQ(b->lookup(3, 4096, 11008, DType::kBF16), flat(1, 6));
  EXPECT_EQ(b->lookup(512, 12288, 4096, DType::kBF16), kCublasAlgo2);
  EXPECT_EQ(b->lookup(448, 12288, 4096, DType::kBF16), kCublas);
  EXPECT_NE(text.find("\"impl\":\"cublas\",\"algo\":2"), std::string::npos) << text;
  EXPECT_EQ(serialize_gemm_table(*b), text);  // stable
  // The thresholds are written for people.
  EXPECT_NE(text.find("\"m1\": 4, \"m2\": 49"), std::string::npos) << text;

  const fs::path dir = test::scratch_dir("gemm_table_roundtrip");
  const fs::path file = dir / "sub" / "dir" / "t.json";
  ASSERT_TRUE(save_gemm_table(a, file).ok());  // creates the folders
  auto c = load_gemm_table(file);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(serialize_gemm_table(*c), text);
  for (const auto& e : fs::directory_iterator(file.parent_path()))
    EXPECT_EQ(e.path().filename(), "t.json") << "a temporary file was left behind";
  const auto missing = load_gemm_table(dir / "nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Replaces the first occurrence of `from` in the round-trip text.
std::string edited(const std::string& from, const std::string& to) {
  std::string s = serialize_gemm_table(two_shape_table());
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(GemmTable, MalformedFilesAreClearErrors) {
  const std::string good = serialize_gemm_table(two_shape_table());
  ASSERT_TRUE(parse_gemm_table(good, "t").ok());
  struct Case {
    std::string text;
    std::string says;  // part of the message
  };
  const std::vector<Case> cases = {
      {"", "not JSON"},
      {"{\"format\": ", "not JSON"},
      {good.substr(0, good.size() / 2), "not JSON"},
      {"[1, 2]", "not a JSON object"},
      {"{}", "\"format\""},
      {edited("fdpp-gemm-table", "fdpp-softmax-calibration"), "\"format\""},
      {edited("\"version\": 1", "\"version\": 2"), "version 2"},
      {edited("\"version\": 1", "\"version\": \"1\""), "\"version\""},
      {edited("\"gpu\": ", "\"gpu_\": "), "\"gpu\""},
      {edited("\"sm_count\":132", "\"sm_count\":-1"), "\"sm_count\""},
      {edited("\"compute_capability\":\"9.0\"", "\"compute_capability\":\"9\""), "compute_capability"},
      {edited("\"compute_capability\":\"9.0\"", "\"compute_capability\":\"9.0x\""), "compute_capability"},
      {edited("\"name\":\"NVIDIA H200\"", "\"name\":7"), "\"name\""},
      {edited("\"dtype\": \"bf16\"", "\"dtype\": \"f32\""), "\"dtype\""},
      {edited("\"dtype\": \"bf16\"", "\"dtype\": \"int4\""), "\"dtype\""},
      {edited("\"shapes\": [", "\"shapes\": {\"a\": ["), "not JSON"},
      {edited("\"shapes\": [", "\"shapez\": ["), "\"shapes\""},
      {edited("\"n\": 12288", "\"n\": 0"), "\"n\""},
      {edited("\"k\": 4096", "\"k\": 4096.5"), "\"k\""},
      {edited("\"n\": 4096, \"k\": 11008", "\"n\": 12288, \"k\": 4096"), "twice"},
      {edited("{\"m\":2,", "{\"m\":1,"), "ascend"},
      {edited("{\"m\":2,", "{\"m\":0,"), "\"m\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":\"gemm\""), "\"impl\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":3"), "\"impl\""},
      {edited("\"config\":\"n64k128s4m8\"", "\"config\":\"n64k128s9m8\""), "not compiled"},
      {edited(",\"config\":\"n64k128s4m8\"", ""), "\"config\""},
      {edited("\"splits\":6", "\"splits\":99"), "\"splits\""},
      {edited("\"algo\":2", "\"algo\":16"), "\"algo\""},
      {edited("\"algo\":2", "\"algo\":-1"), "\"algo\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":\"gemv\",\"algo\":1"), "\"algo\""},
      {edited("\"entries\": [", "\"entries\": [] , \"x\": ["), "\"entries\""},
  };
  for (const Case& c : cases) {
    auto r = parse_gemm_table(c.text, "cache/gemm/x.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("cache/gemm/x.json"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << "expected '" << c.says << "' in: " << r.status().message();
  }
  // Unknown fields and missing documentation fields are fine.
  auto extra = parse_gemm_table(edited("\"created\"", "\"note\": [1], \"created_\""), "t");
  EXPECT_TRUE(extra.ok()) << extra.status().message();
}

TEST(GemmTable, WrongGpuOrDtypeIsRefused) {
  const TunedGemmTable t = two_shape_table();
  EXPECT_TRUE(check_gemm_table_matches(t, kH200, DType::kBF16).ok());
  for (GpuIdentity other : {GpuIdentity{"NVIDIA A100-SXM4-80GB", 108, 8, 0, 13000},
                            GpuIdentity{"NVIDIA H200", 66, 9, 0, 13000},  // a MIG slice
                            GpuIdentity{"NVIDIA H200", 132, 9, 0, 12080},
                            GpuIdentity{"NVIDIA H200", 132, 9, 1, 13000}}) {
    const Status s = check_gemm_table_matches(t, other, DType::kBF16);
    ASSERT_FALSE(s.ok()) << other.summary();
    EXPECT_NE(s.message().find(kH200.summary()), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(other.summary()), std::string::npos) << s.message();
  }
  const Status d = check_gemm_table_matches(t, kH200, DType::kF16);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("bf16"), std::string::npos) << d.message();
  EXPECT_EQ(kH200.summary(), "NVIDIA H200 (sm_90, 132 SMs, CUDA 13.0)");
}

TEST(GemmTable, MergeKeepsOtherShapes) {
  std::vector<GemmTiming> t1, t2;
  add_sweep(t1, "o", 4096, 4096, plausible);
  add_sweep(t1, "down", 4096, 11008, plausible);
  add_sweep(t2, "down", 4096, 11008, [](const ImplChoice& c, int) {
    return c.impl == GemmImpl::kCublas ? 1.0 : 2.0;
  });
  add_sweep(t2, "o13", 5120, 5120, plausible);
  TunedGemmTable old = derive_ok(t1), fresh = derive_ok(t2);
  old.models = {"7b"};
  old.created = "then";
  fresh.models = {"13b", "7b"};
  fresh.created = "now";
  const TunedGemmTable m = merge_gemm_tables(old, fresh);
  ASSERT_EQ(m.shapes().size(), 3u);
  EXPECT_EQ(m.shapes()[0].n, 4096);  // old's order, then the new shapes
  EXPECT_EQ(m.shapes()[1].k, 11008);
  EXPECT_EQ(m.shapes()[2].k, 5120);
  EXPECT_EQ(m.lookup(1, 4096, 4096, DType::kF16), kGemv);     // old's
  EXPECT_EQ(m.lookup(1, 4096, 11008, DType::kF16), kCublas);  // replaced by fresh's
  EXPECT_EQ(m.lookup(1, 5120, 5120, DType::kF16), kGemv);     // added
  EXPECT_EQ(m.created, "now");
  EXPECT_EQ(m.models, (std::vector<std::string>{"7b", "13b"}));
}

// ---- where it lives ------------------------------------------------------------------------

// Sets or clears an environment variable for one scope.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~EnvGuard() {
    if (saved_) setenv(name_, saved_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(GemmTable, CacheDirPrecedence) {
  {
    EnvGuard a("FDPP_CACHE_DIR", "/tmp/fdpp-cache"), b("XDG_CACHE_HOME", "/tmp/xdg"),
        c("HOME", "/home/u");
    EXPECT_EQ(fdpp_cache_dir(), fs::path("/tmp/fdpp-cache"));
  }
  {
    EnvGuard a("FDPP_CACHE_DIR", ""), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/home/u");
    EXPECT_EQ(fdpp_cache_dir(), fs::path("/tmp/xdg/fdpp"));  // empty counts as unset
  }
  {
    EnvGuard a("FDPP_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", "/home/u");
    EXPECT_EQ(fdpp_cache_dir(), fs::path("/home/u/.cache/fdpp"));
  }
  {
    EnvGuard a("FDPP_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", nullptr);
    EXPECT_EQ(fdpp_cache_dir().filename(), "fdpp");
  }
  EXPECT_EQ(gemm_table_file_name(kH200, DType::kF16), "nvidia-h200_sm90_132sm_cuda13.0_f16.json");
  EXPECT_EQ(gemm_table_file_name({"  NVIDIA A100-SXM4 (80GB)!", 108, 8, 0, 12080}, DType::kBF16),
            "nvidia-a100-sxm4-80gb_sm80_108sm_cuda12.8_bf16.json");
  EXPECT_EQ(gemm_table_file_name({"", 1, 0, 0, 0}, DType::kF16), "unknown-gpu_sm00_1sm_cuda0.0_f16.json");
  EXPECT_EQ(gemm_table_path(kH200, DType::kF16, "/c"),
            fs::path("/c/gemm/nvidia-h200_sm90_132sm_cuda13.0_f16.json"));
  {
    EnvGuard a("FDPP_CACHE_DIR", "/tmp/fdpp-cache");
    EXPECT_EQ(gemm_table_path(kH200, DType::kF16),
              fs::path("/tmp/fdpp-cache/gemm/nvidia-h200_sm90_132sm_cuda13.0_f16.json"));
  }
}

// ---- built-in defaults ------------------------------------------------------------------------

TEST(GemmTable, BuiltInDefaults) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    auto b = builtin_gemm_table(dt);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->dtype(), dt);
    ASSERT_FALSE(b->shapes().empty());
    EXPECT_NE(b->gpu().name.find("H200"), std::string::npos);
    // The [N, K] of every linear layer of the four paper models are in it (o of Llama-2-7B,
    // ChatGLM2-6B and OPT-6.7B is one shape, as is the QKV of Llama-2-7B and OPT-6.7B).
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
             {12288, 4096}, {4096, 4096}, {22016, 4096}, {4096, 11008}, {32000, 4096},  // 7B
             {15360, 5120}, {5120, 5120}, {27648, 5120}, {5120, 13824}, {32000, 5120},  // 13B
             {4608, 4096}, {27392, 4096}, {4096, 13696}, {65024, 4096},  // ChatGLM2-6B
             {16384, 4096}, {4096, 16384}, {50272, 4096}})               // OPT-6.7B
      EXPECT_NE(b->find(n, k), nullptr) << n << " " << k;
  }
  auto b = builtin_gemm_table(DType::kF16);
  ASSERT_TRUE(b.ok());
  if (b->created.rfind("seed", 0) == 0) {
    // The seed restates the built-in rule: planning with it equals planning without it.
    GemmDeviceTraits traits;
    traits.sm_count = 132;
    for (int m = 1; m <= GemvConfig::kMaxM; ++m) traits.gemv_ctas_per_sm[m - 1] = 3;
    for (int c = 0; c < kFlatConfigCount; ++c) traits.flat_ctas_per_sm[c] = 2;
    for (const GemmTableShape& s : b->shapes()) {
      const GemmThresholds th = gemm_thresholds(*b, s);
      EXPECT_EQ(th.m1, kDefaultGemvMaxM) << s.name;
      EXPECT_EQ(th.m2, kDefaultFlatMaxM) << s.name;
      for (int64_t m = 1; m <= 700; ++m) {
        const GemmProblem p{m, s.n, s.k, DType::kF16, true};
        ASSERT_EQ(plan_gemm(p, GemmPolicy::kAuto, &*b, traits).choice,
                  plan_gemm(p, GemmPolicy::kAuto, nullptr, traits).choice)
            << s.name << " M " << m;
      }
    }
  }
}

TEST(GemmTable, EmitCppCollapsesRuns) {
  const TunedGemmTable t = two_shape_table();
  auto src = emit_builtin_gemm_table_cpp(t, "fdpp tune -m x --emit-cpp y\nsecond line");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_NE(src->find("builtin_gemm_table_data()"), std::string::npos);
  EXPECT_NE(src->find("\"NVIDIA H200\", 132, 9, 0, 13000, \"bf16\""), std::string::npos) << *src;
  EXPECT_NE(src->find("fdpp tune -m x --emit-cpp y second line"), std::string::npos);
  // One row per run of equal choices: count them against the table.
  size_t runs = 0;
  for (const GemmTableShape& s : t.shapes())
    for (size_t i = 0; i < s.entries.size(); ++i)
      if (i + 1 == s.entries.size() || !(s.entries[i + 1].choice == s.entries[i].choice)) ++runs;
  size_t rows = 0;
  for (size_t at = src->find("\n    {\""); at != std::string::npos; at = src->find("\n    {\"", at + 1))
    ++rows;
  EXPECT_EQ(rows, runs);
  EXPECT_LT(runs, t.shapes()[0].entries.size() + t.shapes()[1].entries.size());
  EXPECT_NE(src->find("{\"qkv\", 12288, 4096, 4, \"gemv\", \"\", "), std::string::npos) << *src;
  EXPECT_NE(src->find("{\"qkv\", 12288, 4096, 512, \"cublas\", \"\", 0, "), std::string::npos);
  EXPECT_FALSE(emit_builtin_gemm_table_cpp(TunedGemmTable{}, "x").ok());
}

// ---- the engine --------------------------------------------------------------------------------

TEST(GemmTable, CpuEngineReportsNoTable) {
  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.gemm_table = "/nonexistent/table.json";  // the CPU backend has one linear(): ignored
  o.autotune = true;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)->gemm_table_source(), "none (CPU backend)");
  o.gemm = "fastest";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fdpp
