// The common path of both decode combines (combine.cu: synchronized partials, each relative
// to its own max; combine_unified.cu: partials relative to one φ), written for latency. A
// row's merge reads a few KB that the split kernel has just left in L2, so its time is the
// number of dependent round trips, not bytes: the (m_s, l_s) pairs of every split are loaded
// at once by warp 0 (kDecodeMaxSplits / 32 predicated loads per lane, issued together) and
// reduced with shuffles, and the accumulators are summed with kCombineLoadsInFlight loads
// per thread issued before any is used. The first combines looped over the splits with a
// branch around every load, 2-3 round trips per split, and took nearly as long as the split
// kernel before them (docs/experiments/log.md, "combine_common.cuh: the looped combines").
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/softmax_state.cuh"
#include "dispatch/decode_splits.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda::decode {

// An empty split (no keys) is m = -inf, l = 0 with acc unwritten. A split whose scores are
// all NaN also has m = -inf (fmaxf drops NaN), but its l is NaN: it is not empty, so that
// the NaN shows in the output. (A unified split whose terms all underflowed has a finite m
// and l = 0: it has keys too.)
__device__ __forceinline__ bool split_has_keys(float m, float l) {
  return m != -INFINITY || l != 0.f;
}

// One row's split weights, in shared memory.
struct SplitWeights {
  float w[kDecodeMaxSplits];  // (split): the weight of acc_s; 0 for a split with no keys
  float m_star;               // max of m_s over the splits with keys; -inf if none has
  float den;                  // Σ_s w_s · l_s
};

// Fills `sw` from the row's S partials (pm, pl: (S)). kRescale (synchronized partials):
// w_s = 2^(m_s − m*), the exact rescale of a partial relative to its own max m_s; otherwise
// (unified, every partial relative to the same φ) w_s = 1. Called by every thread of the
// CTA (at least one warp); ends with a barrier.
template <bool kRescale>
__device__ void stage_split_weights(const float* pm, const float* pl, int S, SplitWeights& sw) {
  static_assert(kDecodeMaxSplits % 32 == 0, "whole lanes' worth of splits");
  if (threadIdx.x < 32) {
    constexpr int kPerLane = kDecodeMaxSplits / 32;
    const int lane = static_cast<int>(threadIdx.x);
    float m[kPerLane], l[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int s = lane + 32 * i;
      m[i] = s < S ? pm[s] : -INFINITY;  // past S: an empty split
      l[i] = s < S ? pl[s] : 0.f;
    }
    float m_star = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (split_has_keys(m[i], l[i])) m_star = fmaxf(m_star, m[i]);
    m_star = warp_max(m_star);
    float den = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const bool has = split_has_keys(m[i], l[i]);
      const float w = !has ? 0.f : kRescale ? partial_weight<Exp2Kind::kExact>(m[i], m_star) : 1.f;
      if (has) den = fmaf(w, l[i], den);
      const int s = lane + 32 * i;
      if (s < S) sw.w[s] = w;
    }
    den = warp_sum(den);
    if (lane == 0) {
      sw.m_star = m_star;
      sw.den = den;
    }
  }
  __syncthreads();
}

// Loads in flight per thread in weighted_split_sum: 16 splits take two round trips.
constexpr int kCombineLoadsInFlight = 8;

// Σ_s w_s · acc_s[d] over the row's S accumulators (pacc: (S, D)). An empty split's
// accumulator is unwritten (it may hold NaN): it is loaded with the others, so that no
// load waits on a branch, and dropped by a select, not multiplied by its zero weight.
__device__ __forceinline__ float weighted_split_sum(const float* pacc, int S, int D, int d,
                                                    const SplitWeights& sw) {
  float o = 0.f;
  for (int s0 = 0; s0 < S; s0 += kCombineLoadsInFlight) {
    float a[kCombineLoadsInFlight];
#pragma unroll
    for (int i = 0; i < kCombineLoadsInFlight; ++i)
      a[i] = s0 + i < S ? pacc[static_cast<int64_t>(s0 + i) * D + d] : 0.f;
#pragma unroll
    for (int i = 0; i < kCombineLoadsInFlight; ++i) {
      const float w = s0 + i < S ? sw.w[s0 + i] : 0.f;
      o = w != 0.f ? fmaf(w, a[i], o) : o;
    }
  }
  return o;
}

}  // namespace fdpp::cuda::decode
