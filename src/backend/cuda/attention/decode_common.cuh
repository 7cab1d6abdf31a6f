// Device code shared by the two split-KV decode kernels (decode_kernel.cuh:
// head_dim as a template constant; decode_generic.cuh: runtime head_dim): which
// work a CTA owns, the per-tile softmax policy, and the partial/output stores.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/softmax_state.cuh"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda::decode {

constexpr int kThreads = 128;  // 4 warps: enough lanes for the tile copies, small enough for
                               // several CTAs per SM (each holds a split's pipeline)
constexpr int kWarps = kThreads / 32;
constexpr int kMaxG = kDecodeMaxHeadsPerCta;
// The softmax step gives warp w the heads g ≡ w (mod kWarps): their running max
// and sum live in that warp's registers for the whole split.
constexpr int kHeadsPerWarp = (kMaxG + kWarps - 1) / kWarps;

// What one CTA computes: heads [h0, h0 + gc) of sequence b (all reading KV head
// kvh) over keys [begin, end) of that sequence.
struct CtaWork {
  int b = 0;
  int kvh = 0;
  int h0 = 0;
  int gc = 0;
  int split = 0;
  int begin = 0;
  int end = 0;
  int slot = -1;          // the sequence's cache slot; -1 when invalid (then begin == end)
  int len = 0;            // the sequence's keys (all splits), after the clamps below
  int64_t kv_offset = 0;  // elements to (slot, kvh, position 0, dim 0) in the layer's K and V
};

__device__ __forceinline__ CtaWork cta_work(const DecodeParams& p, int tile_keys) {
  CtaWork w;
  w.split = static_cast<int>(blockIdx.x);
  w.kvh = static_cast<int>(blockIdx.y) / p.head_groups;
  const int head_group = static_cast<int>(blockIdx.y) % p.head_groups;
  w.b = static_cast<int>(blockIdx.z);
  const int g0 = head_group * kMaxG;
  w.gc = min(kMaxG, p.group - g0);
  w.h0 = w.kvh * p.group + g0;
  // Through L2 (ld.global.cg): the decode kernels may read these before their PDL wait, and
  // an L1 line left by an earlier step must not answer.
  const int slot = __ldcg(p.slots + w.b);
  int len = __ldcg(p.lengths + w.b);
  // A slot or length the engine failed to validate must not read outside the
  // cache: a bad slot attends to nothing (zeros), a length past the capacity
  // is clamped to it.
  const bool slot_ok = slot >= 0 && slot < p.n_slots;
  len = slot_ok ? max(0, min(len, p.capacity)) : 0;
  const DecodeKeyRange r = decode_split_range(len, p.num_splits, w.split, tile_keys);
  w.begin = r.begin;
  w.end = r.end;
  w.slot = slot_ok ? slot : -1;
  w.len = len;
  w.kv_offset = (static_cast<int64_t>(slot_ok ? slot : 0) * p.n_kv_heads + w.kvh) *
                static_cast<int64_t>(p.capacity) * p.head_dim;
  return w;
}

// φ of row (slot, h) of the unified softmax, in log2 units: with `follow` and a finite
// previous row max r, r − the middle of the range of `type` for a row of `len` keys (so that
// a row whose max did not move sits in the middle: m − φ = 4.5 for fp32 P, (L + 1.95) / 2
// for fp16 P; as tuning/score_analysis.cpp models it); else the head's calibrated φ. The
// split kernel and the combine of one launch must pass the same type (the one P is held in).
//
// In two steps, because the choice branches on a loaded value and a warp stalls at such a
// branch until the load returns: load_phi_inputs issues both loads (no branch on what they
// load), the kernels issue their own loads and copies, and only then unified_phi_log2
// decides. (With the split kernels' tails reusing their φ instead of loading it again:
// docs/experiments/log.md, "decode_common.cuh: φ loaded before the branch".)
struct PhiInputs {
  float calibrated;    // the head's calibrated φ (natural-log units)
  float previous_max;  // follow: the row's max of the previous step (NaN: none)
};

// The calibrated half may be loaded before the PDL wait (launch.h): only the host writes φ
// (uploaded in stream order before any kernel that reads it). The previous row max is written
// by kernels (the last step's attention of the layer; in bench-attention's chain of calls, the
// call right before), so it is read after the wait.
__device__ __forceinline__ float load_phi_calibrated(const DecodeParams& p, int h) {
  return p.phi[h];
}
__device__ __forceinline__ float load_phi_previous(const DecodeParams& p, int slot, int h) {
  return p.follow && p.row_max != nullptr && slot >= 0
             ? p.row_max[static_cast<int64_t>(slot) * p.n_heads + h]
             : NAN;
}
__device__ __forceinline__ PhiInputs load_phi_inputs(const DecodeParams& p, int slot, int h) {
  return {load_phi_calibrated(p, h), load_phi_previous(p, slot, h)};
}

// Unified, one split: the split kernel keeps head g's row max (log2 units) for row-following
// φ. The callers store it with their outputs, as soon as it is known, not after the output
// loop and finish_single_split's barrier (that tail is a visible share of a short single-split
// call: docs/experiments/log.md, "decode_common.cuh: the row max stored early"). A row the
// fallback recomputes is stored again (finish_single_split).
__device__ __forceinline__ void store_row_max(const DecodeParams& p, const CtaWork& w, int g,
                                              float m_log2) {
  if (p.row_max != nullptr && w.slot >= 0)
    p.row_max[static_cast<int64_t>(w.slot) * p.n_heads + w.h0 + g] = m_log2 * kLn2;
}

__device__ __forceinline__ float unified_phi_log2(const PhiInputs& in, UnifiedType type,
                                                  int len) {
  return isfinite(in.previous_max) ? in.previous_max * kLog2e - unified_range_center(type, len)
                                   : in.calibrated * kLog2e;
}

// Index of row (b, h)'s partial of split s in part_m / part_l (× head_dim in part_acc).
__device__ __forceinline__ int64_t partial_index(const DecodeParams& p, int b, int h, int split) {
  return (static_cast<int64_t>(b) * p.n_heads + h) * p.num_splits + split;
}

// A CTA with no keys: an empty partial (m = -inf, l = 0, which the combine
// skips), or, with a single split, the row's output itself (zeros: attention
// over nothing; the CPU reference refuses length 0 instead).
template <class T>
__device__ void store_empty(const DecodeParams& p, const CtaWork& w) {
  if (p.num_splits == 1) {
    T* out = static_cast<T*>(p.out);  // (batch, n_heads, head_dim)
    for (int i = threadIdx.x; i < w.gc * p.head_dim; i += blockDim.x) {
      const int g = i / p.head_dim, d = i % p.head_dim;
      out[(static_cast<int64_t>(w.b) * p.n_heads + w.h0 + g) * p.head_dim + d] = from_float<T>(0.f);
    }
  } else {
    for (int g = threadIdx.x; g < w.gc; g += blockDim.x) {
      const int64_t i = partial_index(p, w.b, w.h0 + g, w.split);
      p.part_m[i] = -INFINITY;
      p.part_l[i] = 0.f;
    }
  }
}

// One element of row (b, h0 + g)'s result: the final output when there is one
// split (acc / l, zeros if l == 0), else the split's partial; m and l go with
// element d == 0.
template <class T>
__device__ __forceinline__ void store_result(const DecodeParams& p, const CtaWork& w, int g, int d,
                                             float acc, float m, float l) {
  const int h = w.h0 + g;
  if (p.num_splits == 1) {
    T* out = static_cast<T*>(p.out);  // (batch, n_heads, head_dim)
    out[(static_cast<int64_t>(w.b) * p.n_heads + h) * p.head_dim + d] =
        from_float<T>(softmax_normalize(acc, l));
  } else {
    const int64_t i = partial_index(p, w.b, h, w.split);
    p.part_acc[i * p.head_dim + d] = acc;
    if (d == 0) {
      p.part_m[i] = m;
      p.part_l[i] = l;
    }
  }
}

// ---- the softmax policy of a split ------------------------------------------------
// Interface: init(); step<kTK>(sp, scorr, gc) once per key tile, after the
// tile's scores are in sp and before the P·V product; publish(sm_m, sm_l, gc)
// after the last tile. Called by every thread of the CTA (warp-uniform control).
template <SoftmaxPolicy kPolicy>
struct SplitSoftmax;

template <>
struct SplitSoftmax<SoftmaxPolicy::kSynchronized> {
  float m[kHeadsPerWarp];  // running max (log2 units) of head warp + j·kWarps
  float l[kHeadsPerWarp];  // running Σ 2^(t - m)

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) softmax_init(m[j], l[j]);
  }

  // sp (kMaxG, kTK): scores t of this tile, -inf for keys past the split's end;
  // overwritten with p = 2^(t - m_new). scorr (kMaxG): 2^(m_old - m_new), by
  // which the P·V step rescales head g's accumulator before adding this tile.
  template <int kTK>
  __device__ __forceinline__ void step(float (*sp)[kTK], float* scorr, int gc) {
    static_assert(kTK <= 64, "a lane holds at most two keys of a tile");
    constexpr int kPerLane = (kTK + 31) / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) {
      const int g = warp + j * kWarps;
      if (g >= gc) break;  // gc is uniform: whole warps leave together
      float t[kPerLane];
      float tile_max = -INFINITY;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int k = lane + 32 * i;
        t[i] = k < kTK ? sp[g][k] : -INFINITY;
        tile_max = fmaxf(tile_max, t[i]);
      }
      tile_max = warp_max(tile_max);
      const SoftmaxRescale r = softmax_rescale<Exp2Kind::kExact>(m[j], tile_max);
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int k = lane + 32 * i;
        const float pk = softmax_p<Exp2Kind::kExact>(t[i], r);
        if (k < kTK) sp[g][k] = pk;
        sum += k < kTK ? pk : 0.f;
      }
      sum = warp_sum(sum);
      l[j] = softmax_rescale_l(l[j], r) + sum;
      m[j] = r.m_new;
      if (lane == 0) scorr[g] = r.corr;
    }
  }

  __device__ __forceinline__ void publish(float* sm_m, float* sm_l, int gc) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) {
      const int g = warp + j * kWarps;
      if (g < gc && lane == 0) sm_m[g] = m[j], sm_l[g] = l[j];
    }
  }
};
// The unified policy needs no SplitSoftmax: with φ known before the first key, the thread
// that finishes a score exponentiates it on the spot (p = 2^(t - φ)) and adds it to its own
// running max and sum, which are reduced once, after the split's last tile. So a tile costs
// no max reduction, no rescale of the accumulator and one barrier less (the kernels' code).

}  // namespace fdpp::cuda::decode
