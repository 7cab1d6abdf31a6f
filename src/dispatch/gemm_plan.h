// The GEMM dispatch decision as a pure function (FlashDecoding++'s heuristic
// dataflow): for y[M,N] (+)= x[M,K]·W[N,K]ᵀ pick ImplA (CUDA-core GEMV), an
// ImplB configuration (tensor-core flat GEMM) or ImplC (cuBLASLt), and the
// split-K of the custom kernels. CUDA-free: CI tests it without a GPU, and the
// CUDA backend's GemmDispatcher only executes what it returns.
//
// Graph safety: the plan depends on (problem, policy, table, device traits)
// only, all fixed for a given call site once the backend exists, so a replayed
// graph runs exactly the plan it was captured with; the split-K workspace it
// may use is allocated whole when the backend is created.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dispatch/gemm_configs.h"
#include "dispatch/gemm_policy.h"
#include "core/dtype.h"

namespace fdpp {

enum class GemmImpl : uint8_t { kGemv, kFlat, kCublas };
const char* gemm_impl_name(GemmImpl impl);  // "gemv", "flat", "cublas"

// What a dispatch table entry names: an implementation, the ImplB
// configuration (index into kFlatConfigs) and optionally the split-K count.
struct ImplChoice {
  GemmImpl impl = GemmImpl::kCublas;
  int config = -1;  // kFlat: 0..kFlatConfigCount-1; otherwise -1
  int splits = 0;   // split-K for kGemv / kFlat; 0: the planner picks (a fitted rule for
                    // the GEMV, the cost model for the flat GEMM)
  // kCublas: which of cuBLASLt's heuristic answers for the shape runs (0: its first, the
  // library's own pick); the tuner times the first few and keeps the fastest.
  int algo = 0;
  bool operator==(const ImplChoice&) const = default;
};
// Largest cuBLASLt heuristic index a choice may name (kCublas's algo).
inline constexpr int kMaxCublasAlgo = 15;
// "gemv", "flat:n64k128s4m8", "cublas" (with "/s4" when splits is set, "/a2" when a
// cuBLASLt choice names a heuristic answer other than the first).
std::string impl_choice_name(const ImplChoice& c);

struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::kF16;
  bool aligned = true;  // x and w start on 16-byte boundaries (the custom kernels' loads)
};

// What the planner knows about the GPU: fixed when the backend is created.
struct GemmDeviceTraits {
  int sm_count = 0;
  // Resident CTAs per SM (0: unknown, counted as 1; -1: cannot launch on this GPU, e.g.
  // more shared memory than it has): ImplA per M (index M - 1), ImplB per configuration.
  int gemv_ctas_per_sm[GemvConfig::kMaxM] = {};
  int flat_ctas_per_sm[kFlatConfigCount] = {};
  int64_t partial_bytes = kSplitKPartialBytes;  // split-K workspace: fp32 (splits, M, N)
  int counters = kSplitKCounters;               // split-K arrival counters (one per output tile)
};

// A tuned dispatch table (issue 6 loads one per GPU and model). lookup() must be
// O(1) and return the same answer for the same arguments; nullopt means "use
// the built-in rule".
class GemmTable {
 public:
  virtual ~GemmTable() = default;
  virtual std::optional<ImplChoice> lookup(int64_t m, int64_t n, int64_t k, DType dtype) const = 0;
};

struct GemmPlan {
  ImplChoice choice;     // resolved: splits >= 1 for kGemv / kFlat, 0 for kCublas (its algo kept)
  int64_t k_split = 0;   // K elements per split (the last split may be shorter)
  int64_t tiles = 0;     // output tiles of W rows: CTAs per split
  // Set when the requested kernel cannot run this problem and cuBLASLt runs instead.
  const char* fallback = nullptr;
};

// The built-in rule, for shapes no tuned table (nor the built-in H200 table,
// gemm_table_h200.cpp) covers:
//   M <= kDefaultGemvMaxM            → ImplA
//   M <= kDefaultFlatMaxM            → ImplB, among the configurations with the fewest
//                                      n8 tiles that hold M, the one the split-K cost
//                                      model rates fastest for [N, K]
//   larger M, or a shape the custom kernels cannot run → ImplC
// The paper's rule is GEMV for M <= 4 and flat GEMM up to 64. On the H200 with CUDA 13.0
// cuBLASLt already streams near the read bandwidth from M = 1 to 128 on the paper's models'
// shapes: ImplB never won, and ImplA won only at M = 1-2 on some shapes while losing on
// others (13B QKV), so that rule cost far more at its worst M than it ever won
// (docs/experiments/log.md, "gemm_plan.h: the paper's rule against cuBLASLt"). Both bounds
// are therefore 0: an untuned shape runs
// cuBLASLt, and `fdpp tune` finds the M where a custom kernel wins.
inline constexpr int64_t kDefaultGemvMaxM = 0;
inline constexpr int64_t kDefaultFlatMaxM = 0;
ImplChoice default_gemm_choice(const GemmProblem& p, const GemmDeviceTraits& traits);

// The ImplB configuration `--gemm flat` uses for M when the table names none
// (the flat part of the rule above); -1 when M exceeds every configuration.
int default_flat_config(const GemmProblem& p, const GemmDeviceTraits& traits);

// Why `impl` (with `config` for kFlat) cannot run `p` at all, or nullptr if it can.
const char* gemm_unsupported_reason(GemmImpl impl, int config, const GemmProblem& p,
                                    const GemmDeviceTraits& traits);

// Resolves a choice for p: picks the split-K when choice.splits == 0 (clamping a
// requested count to what K and the workspace allow), or falls back to cuBLASLt
// with the reason when the kernel cannot run p.
GemmPlan resolve_gemm_choice(const ImplChoice& choice, const GemmProblem& p,
                             const GemmDeviceTraits& traits);

// The decision: `policy` forces an implementation wherever it can run (kFlat
// takes the table's configuration when it names a flat one); kAuto takes the
// table's entry, else the built-in rule. table may be null.
GemmPlan plan_gemm(const GemmProblem& p, GemmPolicy policy, const GemmTable* table,
                   const GemmDeviceTraits& traits);

// The split-K cost model behind the flat GEMM's split (the GEMV's follows a rule fitted to
// H200 timings, gemm_plan.cpp), exposed for tests and the benchmark: the estimated cost
// (bytes streamed by the busiest SM, inflated when too few bytes are in flight) of running
// `impl`/`config` with `splits` splits.
// Negative if that split count is not a valid plan.
double gemm_split_cost(GemmImpl impl, int config, int splits, const GemmProblem& p,
                       const GemmDeviceTraits& traits);

}  // namespace fdpp
