// Turning GEMM timings into a dispatch table (design.md, Technique 3): the fastest choice
// per (shape, M), the regret of a table or a rule against measurements, the batch-1 near
// ties that only the decode step settles, and merging a fresh tune into a cached table.
// The timings come from Backend::time_gemms (backend/gemm_timing.h, tuning/gemm_tune.h);
// the table is dispatch's (dispatch/gemm_table.h). CUDA-free, so CI tests all of it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/gemm_timing.h"
#include "core/dtype.h"
#include "dispatch/gemm_plan.h"
#include "dispatch/gemm_table.h"
#include "fdpp/status.h"

namespace fdpp {

// ---- derivation from measurements -------------------------------------------------

// A cuBLASLt answer other than the heuristic's first must beat the first by more than
// this to be chosen: the first few answers are often within a percent of each other, and
// picking among them by one noisy pass made the table flicker from one M to the next
// (gate_up alternated between two answers every few M: docs/experiments/log.md,
// "gemm_table_derive.h: cuBLASLt answers flickering").
inline constexpr double kCublasAlgoMargin = 0.02;

// The fastest measured choice per (shape, M): one shape per distinct [N, K], one
// entry per measured M. Ties go to the simpler kernel, in the order GEMV, flat by
// configuration index, cuBLASLt, then fewer splits, so the same measurements always
// give the same table; a cuBLASLt answer past the first needs kCublasAlgoMargin.
// InvalidArgument when no timing is usable.
Result<TunedGemmTable> derive_gemm_table(const std::vector<GemmTiming>& timings,
                                         const GpuIdentity& gpu, DType dtype);

// How much slower a rule is than the best measured choice: at each measured M of
// [n, k], us(chosen) / us(best) - 1. An M where the rule names nothing or something
// not measured there is counted in `unmeasured`, not in the regret.
struct GemmRegret {
  double max = 0;
  int worst_m = 0;  // 0 when no M was compared
  double mean = 0;
  int points = 0;
  int unmeasured = 0;
};
using GemmChooser = std::function<std::optional<ImplChoice>(int m)>;
GemmRegret gemm_regret(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                       const GemmChooser& choose);

// The fastest measured variant of `impl` at (n, k, m) (any configuration and split).
std::optional<ImplChoice> fastest_measured(const std::vector<GemmTiming>& timings, int64_t n,
                                           int64_t k, int m, GemmImpl impl);

// The two sides of one regret point at (n, k, m): the fastest measurement of exactly
// `choice` (a split of 0: the planner's) and the fastest measurement of anything. nullopt
// when `choice` was not measured there. With measured_us, a verification pass's worst
// point can be read against the pass the table was derived from: did the choice slow
// down, or did its rival speed up?
struct GemmRegretPoint {
  ImplChoice choice;
  ImplChoice best;  // as measured: its split resolved
  double choice_us = 0, best_us = 0;
};
std::optional<GemmRegretPoint> gemm_regret_point(const std::vector<GemmTiming>& timings,
                                                 int64_t n, int64_t k, int m,
                                                 const ImplChoice& choice);
// The fastest measurement of exactly `choice` at (n, k, m); nullopt when none.
std::optional<double> measured_us(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                                  int m, const ImplChoice& choice);

// What `fdpp tune` prints per shape. `timings` should come from a pass other than the
// one the table was derived from: on its own measurements a table's regret is 0 by
// construction, and only a second pass shows what timing noise made it pick.
struct GemmShapeReport {
  std::string name;
  int64_t n = 0, k = 0;
  GemmThresholds thresholds;
  GemmRegret table;      // the table's lookups
  GemmRegret two_point;  // just M1 / M2: the fastest GEMV up to M1, the fastest flat up to M2
};
std::vector<GemmShapeReport> report_gemm_table(const TunedGemmTable& table,
                                               const std::vector<GemmTiming>& timings);

// ---- near ties that only the decode step settles ----------------------------------------

// Timed alone, two implementations of a shape can come within a few percent of each other at
// M = 1 and still differ by much more inside the decode step: there the GEMV runs the RMSNorm
// or SiLU gate fused and overlaps its neighbours under PDL, while cuBLASLt pays the prologue's
// own kernel and a full boundary on each side, so a pair that swaps places from one alone-
// timing pass to the next can be a clear per-layer difference in the step (Llama-2-7B down
// at M 1: docs/experiments/log.md, "gemm_table_derive.h: near ties alone, apart in the
// step"). `--autotune` settles such ties by timing decode steps
// with each choice (tuning/gemm_table_setup.h). The margin covers the alone-timing's gap.
inline constexpr double kStepTieMargin = 0.10;

struct GemmTimedChoice {
  ImplChoice choice;
  double us = 0;  // its time alone (µs per call)
};

struct GemmStepTie {
  std::string shape;
  int64_t n = 0, k = 0;
  int m = 0;
  std::vector<GemmTimedChoice> options;  // the fastest alone first, each within the margin of it
};

// Per [N, K] measured at M = m: the fastest measured variant of each implementation (GEMV,
// flat GEMM, cuBLASLt) whose time is within `margin` of the fastest of all; a shape where
// only one implementation is that close is no tie and is left out.
std::vector<GemmStepTie> gemm_step_ties(const std::vector<GemmTiming>& timings, int m,
                                        double margin = kStepTieMargin);

// `table` with exactly M = m of [n, k] served by `choice` (measured at `us` alone; 0: not
// measured): the entry at m is replaced, or one is inserted when m is 1 or the table has an
// entry at m - 1 (so no other M changes hands). InvalidArgument otherwise, and for a shape
// the table lacks.
Result<TunedGemmTable> with_gemm_choice(const TunedGemmTable& table, int64_t n, int64_t k, int m,
                                        const ImplChoice& choice, double us);

// ---- accumulating tunes ------------------------------------------------------------

// `fresh`'s shapes replace `old`'s of the same [N, K]; the others of `old` stay (one
// file per GPU accumulates every model tuned on it). Identity and dtype: `fresh`'s.
TunedGemmTable merge_gemm_tables(const TunedGemmTable& old, const TunedGemmTable& fresh);

}  // namespace fdpp
