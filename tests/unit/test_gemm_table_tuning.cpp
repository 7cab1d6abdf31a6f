// Turning GEMM timings into a dispatch table (tuning/gemm_table_derive.h,
// tuning/gemm_table_files.h, tuning/gemm_table_setup.h), in CI: the table derived from
// synthetic timings (fastest per M, ties, non-monotone winners, a shape GEMV never wins),
// M1 / M2, regret, the batch-1 near ties and their settling by the step time, merging,
// the cache directory's precedence and the emitted built-in table.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "dispatch/gemm_plan.h"
#include "dispatch/gemm_table.h"
#include "gemm_table_test_data.h"
#include "tuning/gemm_table_derive.h"
#include "tuning/gemm_table_files.h"
#include "tuning/gemm_table_setup.h"

namespace fdpp {
namespace {

using namespace gemm_table_test;
namespace fs = std::filesystem;


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

}  // namespace
}  // namespace fdpp
