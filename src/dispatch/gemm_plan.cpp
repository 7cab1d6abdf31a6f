#include "dispatch/gemm_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace fdpp {
namespace {

// Bytes in flight one SM needs to stream at its share of HBM bandwidth:
// Little's law at ~36 GB/s per SM (4.8 TB/s over 132 SMs) × ~1.8 µs loaded latency.
constexpr double kInflightTarget = 64.0 * 1024;
// The fixed cost of a split-K besides its partials, in bytes of one SM's fair
// share: the arrival atomics and the last CTA's serial reduction pass (about
// half a microsecond).
constexpr double kSplitPenaltyBytes = 16.0 * 1024;
// An SM streams at most ~3× its fair share (its L2 → SM path, ~64 B/clock).
constexpr double kMaxSmShare = 3.0;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a kernel covers a problem: tiles of W rows per CTA, K in blocks of `granule`.
struct Geometry {
  bool gemv = false;        // ImplA (its split count is not the cost model's: gemv_splits)
  int64_t tiles = 0;        // CTAs per split
  int64_t tile_rows = 0;    // W rows per CTA
  int64_t granule = 0;      // K elements per block; split boundaries fall on multiples
  int64_t k_blocks = 0;     // ceil(K / granule)
  int64_t max_blocks = 0;   // blocks one split may hold (GEMV: its x slice must fit smem)
  double block_bytes = 0;   // W bytes a CTA streams per block
  double inflight = 0;      // W bytes one CTA keeps in flight
  int ctas_per_sm = 1;
};

Geometry geometry(GemmImpl impl, int config, const GemmProblem& p, const GemmDeviceTraits& t) {
  Geometry g;
  if (impl == GemmImpl::kGemv) {
    const int m = static_cast<int>(p.m);
    g.gemv = true;
    g.tile_rows = GemvConfig::kRowsPerCta;
    g.granule = GemvConfig::k_round(m);
    // The largest whole number of rounds whose x slice (M, k_split) fits the smem cap.
    g.max_blocks = std::max<int64_t>(1, GemvConfig::kMaxXBytes / (2 * p.m) / g.granule);
    // A warp's round of loads is in flight only between its issue and the
    // FMAs (not while it computes, stages x or reduces): count half.
    g.inflight = 0.5 * GemvConfig::inflight_bytes(m);
    g.ctas_per_sm = std::max(1, t.gemv_ctas_per_sm[m - 1]);
  } else {
    const FlatConfigDesc& c = kFlatConfigs[config];
    g.tile_rows = c.block_n;
    g.granule = c.block_k;
    g.inflight = c.inflight_bytes();
    g.ctas_per_sm = std::max(1, t.flat_ctas_per_sm[config]);
  }
  g.tiles = ceil_div(p.n, g.tile_rows);
  g.k_blocks = ceil_div(p.k, g.granule);
  if (impl != GemmImpl::kGemv) g.max_blocks = std::max<int64_t>(1, g.k_blocks);  // no cap
  g.block_bytes = static_cast<double>(g.tile_rows * g.granule * 2);
  return g;
}

// Splits that actually hold blocks when `splits` are asked for: ceil(k_blocks / per) with
// per = ceil(k_blocks / splits) can be smaller (10 blocks in 4 asks → 3 per → 4 splits,
// 10 in 6 → 2 per → 5 splits).
int64_t effective_splits(int64_t k_blocks, int64_t splits) {
  if (k_blocks <= 0) return 1;
  return ceil_div(k_blocks, ceil_div(k_blocks, splits));
}

bool workspace_fits(const Geometry& g, int64_t splits, const GemmProblem& p,
                    const GemmDeviceTraits& t) {
  if (splits <= 1) return true;
  return splits * p.m * p.n * 4 <= t.partial_bytes && g.tiles <= t.counters;
}

// The estimated time of a split count, in bytes per SM at the fair share of
// HBM bandwidth (sms SMs each streaming total/sms bytes). Two bounds:
//  - HBM: all bytes at the full rate, slowed when too few bytes are in flight
//    GPU-wide (resident CTAs × their in-flight bytes < sms × kInflightTarget);
//  - the busiest SM: its CTAs' bytes at the rate its own in-flight bytes allow,
//    which may exceed the fair share (an SM with more resident CTAs pulls more
//    while others idle) up to kMaxSmShare.
// A split adds its partials (written and read back once: 8·S·M·N bytes) and a
// fixed cost for the last CTA's reduction.
double split_cost(const Geometry& g, int64_t splits, const GemmProblem& p,
                  const GemmDeviceTraits& t) {
  const int64_t sms = std::max(1, t.sm_count);
  const int64_t ctas = g.tiles * splits;
  const int64_t blocks = g.k_blocks > 0 ? ceil_div(g.k_blocks, splits) : 0;
  const double cta_bytes = static_cast<double>(blocks) * g.block_bytes;
  const double resident = static_cast<double>(std::min<int64_t>(ctas, sms * g.ctas_per_sm));
  const double hbm_eff = std::min(1.0, resident * g.inflight / (sms * kInflightTarget));
  // All of W once (the last split's blocks may be fewer than cta_bytes says).
  const double hbm = static_cast<double>(g.tiles * g.k_blocks) * g.block_bytes / sms / hbm_eff;
  const int64_t per_sm = ceil_div(ctas, sms);
  const double share =
      std::min(kMaxSmShare, std::min<int64_t>(per_sm, g.ctas_per_sm) * g.inflight / kInflightTarget);
  const double busiest = static_cast<double>(per_sm) * cta_bytes / share;
  const double split = splits > 1 ? kSplitPenaltyBytes +
                                        8.0 * splits * static_cast<double>(p.m) * p.n / sms
                                  : 0.0;
  return std::max(hbm, busiest) + split;
}

// 0 when no split count is both large enough (GEMV's smem cap) and small enough
// (workspace); otherwise the cheapest, the fewest splits among equals.
int64_t min_splits(const Geometry& g) {
  return g.k_blocks > 0 ? ceil_div(g.k_blocks, g.max_blocks) : 1;
}
// kMaxSplitK bounds the search, except that a GEMV whose x slice forces more
// splits (a huge K at M = 8) still gets the fewest that work.
int64_t max_splits(const Geometry& g) {
  return std::max(min_splits(g), std::max<int64_t>(1, std::min<int64_t>(kMaxSplitK, g.k_blocks)));
}

// The GEMV does not use the cost model: on the H200 it split several times more than the
// fastest count on most Llama-2 7B/13B shapes, and lost time at every M timed
// (docs/experiments/log.md, "The GEMV planner's own split against the swept best"). Fitted to
// those timings instead: the fewest splits whose x slice fits shared memory, then more only
// while the GPU holds fewer than kGemvCtasPerSm CTAs per SM and each CTA still streams
// kGemvMinCtaBytes of W (a short CTA pays its x staging and reduction for little streaming).
// On the measured (shape, M) points it picks the fastest count at most and is never far off
// (docs/experiments/log.md, "gemm_plan.cpp: the fitted GEMV split rule").
constexpr int64_t kGemvCtasPerSm = 5;
constexpr double kGemvMinCtaBytes = 64.0 * 1024;

int64_t gemv_splits(const Geometry& g, const GemmProblem& p, const GemmDeviceTraits& t) {
  const int64_t sms = std::max(1, t.sm_count);
  int64_t best = 0;
  for (int64_t s = min_splits(g); s <= max_splits(g); ++s) {
    if (effective_splits(g.k_blocks, s) != s || !workspace_fits(g, s, p, t)) continue;
    if (best > 0 && (g.tiles * best >= kGemvCtasPerSm * sms ||
                     static_cast<double>(ceil_div(g.k_blocks, s)) * g.block_bytes <
                         kGemvMinCtaBytes))
      break;
    best = s;
  }
  return best;
}

int64_t best_splits(const Geometry& g, const GemmProblem& p, const GemmDeviceTraits& t) {
  if (g.gemv) return gemv_splits(g, p, t);
  const int64_t lo = min_splits(g), hi = max_splits(g);
  int64_t best = 0;
  double best_cost = 0;
  for (int64_t s = lo; s <= hi; ++s) {
    if (effective_splits(g.k_blocks, s) != s || !workspace_fits(g, s, p, t)) continue;
    const double c = split_cost(g, s, p, t);
    if (best == 0 || c < best_cost) best = s, best_cost = c;
  }
  return best;
}

}  // namespace

const char* gemm_impl_name(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::kGemv: return "gemv";
    case GemmImpl::kFlat: return "flat";
    case GemmImpl::kCublas: return "cublas";
  }
  return "?";
}

std::string impl_choice_name(const ImplChoice& c) {
  std::string s = gemm_impl_name(c.impl);
  if (c.impl == GemmImpl::kFlat) {
    s += ':';
    s += c.config >= 0 && c.config < kFlatConfigCount ? kFlatConfigs[c.config].name : "?";
  }
  if (c.impl != GemmImpl::kCublas && c.splits > 0) s += "/s" + std::to_string(c.splits);
  if (c.impl == GemmImpl::kCublas && c.algo > 0) s += "/a" + std::to_string(c.algo);
  return s;
}

const char* gemm_unsupported_reason(GemmImpl impl, int config, const GemmProblem& p,
                                    const GemmDeviceTraits& traits) {
  if (impl == GemmImpl::kCublas) return nullptr;
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16) return "dtype is not f16/bf16";
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  if (p.m < 1 || p.n < 1 || p.k < 0 || p.m > kMax32 || p.n > kMax32 || p.k > kMax32)
    return "shape outside the kernels' 32-bit indexing";
  if (p.k % 8 != 0) return "K is not a multiple of 8 (16-byte loads)";
  if (!p.aligned) return "x or w does not start on a 16-byte boundary";
  if (impl == GemmImpl::kGemv) {
    if (p.m > GemvConfig::kMaxM) return "M > 8 (the GEMV is compiled for M = 1..8)";
    if (traits.gemv_ctas_per_sm[p.m - 1] < 0) return "the GEMV does not fit this GPU";
  } else {
    if (config < 0 || config >= kFlatConfigCount) return "no such flat GEMM configuration";
    if (p.m > kFlatConfigs[config].max_m()) return "M exceeds the configuration's n8 tiles";
    if (traits.flat_ctas_per_sm[config] < 0) return "the configuration does not fit this GPU";
  }
  if (best_splits(geometry(impl, config, p, traits), p, traits) == 0)
    return "the split-K workspace cannot hold the splits this shape needs";
  return nullptr;
}

double gemm_split_cost(GemmImpl impl, int config, int splits, const GemmProblem& p,
                       const GemmDeviceTraits& traits) {
  if (impl == GemmImpl::kCublas || splits < 1) return -1;
  if (impl == GemmImpl::kFlat && (config < 0 || config >= kFlatConfigCount)) return -1;
  if (impl == GemmImpl::kGemv && (p.m < 1 || p.m > GemvConfig::kMaxM)) return -1;
  if (p.n < 1 || p.k < 0) return -1;
  const Geometry g = geometry(impl, config, p, traits);
  if (splits < min_splits(g) || splits > max_splits(g) ||
      effective_splits(g.k_blocks, splits) != splits ||
      !workspace_fits(g, splits, p, traits))
    return -1;
  return split_cost(g, splits, p, traits);
}

GemmPlan resolve_gemm_choice(const ImplChoice& choice, const GemmProblem& p,
                             const GemmDeviceTraits& traits) {
  GemmPlan plan;
  if (choice.impl == GemmImpl::kCublas) plan.choice.algo = choice.algo;
  if (choice.impl == GemmImpl::kCublas || p.m <= 0 || p.n <= 0) return plan;
  if (const char* why = gemm_unsupported_reason(choice.impl, choice.config, p, traits)) {
    plan.fallback = why;
    return plan;
  }
  const Geometry g = geometry(choice.impl, choice.config, p, traits);
  int64_t s = best_splits(g, p, traits);  // > 0: gemm_unsupported_reason checked it
  if (choice.splits > 0) {
    // A requested count, moved into the feasible range: at least what the
    // GEMV's x slice needs, at most what K and the workspace allow.
    const int64_t lo = min_splits(g);
    int64_t want =
        effective_splits(g.k_blocks, std::clamp<int64_t>(choice.splits, lo, max_splits(g)));
    while (want > lo && !workspace_fits(g, want, p, traits))
      want = effective_splits(g.k_blocks, want - 1);
    if (workspace_fits(g, want, p, traits)) s = want;
  }
  plan.choice = {choice.impl, choice.impl == GemmImpl::kFlat ? choice.config : -1,
                 static_cast<int>(s)};
  plan.k_split = g.k_blocks > 0 ? ceil_div(g.k_blocks, s) * g.granule : 0;
  plan.tiles = g.tiles;
  return plan;
}

int default_flat_config(const GemmProblem& p, const GemmDeviceTraits& traits) {
  int tiles = 0;  // the fewest n8 tiles any configuration offers for M
  for (const FlatConfigDesc& c : kFlatConfigs)
    if (p.m <= c.max_m() && (tiles == 0 || c.max_m_tiles < tiles)) tiles = c.max_m_tiles;
  if (tiles == 0) return -1;
  int first = -1, best = -1;
  double best_cost = 0;
  for (int i = 0; i < kFlatConfigCount; ++i) {
    if (kFlatConfigs[i].max_m_tiles != tiles) continue;
    if (first < 0) first = i;
    if (gemm_unsupported_reason(GemmImpl::kFlat, i, p, traits) != nullptr) continue;
    const Geometry g = geometry(GemmImpl::kFlat, i, p, traits);
    const double c = split_cost(g, best_splits(g, p, traits), p, traits);
    if (best < 0 || c < best_cost) best = i, best_cost = c;
  }
  // None can run p (K % 8, alignment): still name one, so the caller reports why.
  return best >= 0 ? best : first;
}

ImplChoice default_gemm_choice(const GemmProblem& p, const GemmDeviceTraits& traits) {
  if (p.m >= 1 && p.m <= kDefaultGemvMaxM &&
      gemm_unsupported_reason(GemmImpl::kGemv, -1, p, traits) == nullptr)
    return {GemmImpl::kGemv, -1, 0};
  if (p.m >= 1 && p.m <= kDefaultFlatMaxM) {
    const int c = default_flat_config(p, traits);
    if (c >= 0 && gemm_unsupported_reason(GemmImpl::kFlat, c, p, traits) == nullptr)
      return {GemmImpl::kFlat, c, 0};
  }
  return {GemmImpl::kCublas, -1, 0};
}

GemmPlan plan_gemm(const GemmProblem& p, GemmPolicy policy, const GemmTable* table,
                   const GemmDeviceTraits& traits) {
  ImplChoice want;
  switch (policy) {
    case GemmPolicy::kCublas: return GemmPlan{};
    case GemmPolicy::kGemv: want = {GemmImpl::kGemv, -1, 0}; break;
    case GemmPolicy::kFlat: {
      std::optional<ImplChoice> t;
      if (table) t = table->lookup(p.m, p.n, p.k, p.dtype);
      if (t && t->impl == GemmImpl::kFlat) {
        want = *t;
      } else {
        want = {GemmImpl::kFlat, default_flat_config(p, traits), 0};
        if (want.config < 0) {
          GemmPlan plan;
          plan.fallback = "M exceeds every flat GEMM configuration (M > 64)";
          return plan;
        }
      }
      break;
    }
    case GemmPolicy::kAuto: {
      std::optional<ImplChoice> t;
      if (table) t = table->lookup(p.m, p.n, p.k, p.dtype);
      want = t ? *t : default_gemm_choice(p, traits);
      break;
    }
  }
  return resolve_gemm_choice(want, p, traits);
}

}  // namespace fdpp
