// The softmax state of one attention row, shared by every attention kernel and both decode
// combines: the mergeable pair (m, l) of flashinfer's state, with the accumulator kept by the
// caller (its layout is each kernel's own). Scores are in log2 units (t = s·scale·log2 e),
// so every exponential is a 2^x.
//
//  * Synchronized (online softmax, FlashAttention-2): m is the running max and l = Σ 2^(t − m).
//    A tile with a new max rescales l (here) and the accumulator (the caller) by
//    corr = 2^(m_old − m_new) before adding its own terms 2^(t − m_new).
//  * Unified max (design.md, Technique 1): every term is 2^(t − φ) for one φ known up front, so
//    nothing is ever rescaled; m is kept only for the range check (dispatch/softmax_range.h).
//  * Partials: a state relative to its own max m_s enters a merge relative to the merged max
//    m* with the weight 2^(m_s − m*) (synchronized), or 1 (unified: every partial is relative
//    to the same φ).
//  * The empty / masked row: while every key so far is masked the max is −inf, and the
//    exponent offset is 0 instead (max_offset), so that no −inf − (−inf) = NaN arises: every
//    term is then 2^−inf = 0, and l stays 0. An empty row normalises to 0.
//
// The functions keep each kernel's arithmetic exactly (operation order, fp32, which 2^x), so a
// kernel computes the same bits through them; where two kernels' expressions differ (the
// scaled max of the prefill kernel, the double-precision merge of the unified combine's
// fallback) each form has its own function rather than one that rounds differently.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/ptx.cuh"

namespace fdpp::cuda {

// Which 2^x a kernel uses. kExact: exp2f (the CUDA-core kernels, the fallback, the combine).
// kMufu: ex2.approx.ftz (ptx.cuh, fast_exp2), the tensor-core kernels: subnormal results
// flush to 0, as dispatch/softmax_range.h assumes for them.
enum class Exp2Kind { kExact, kMufu };

template <Exp2Kind kExp>
__device__ __forceinline__ float softmax_exp2(float x) {
  if constexpr (kExp == Exp2Kind::kMufu) {
    return fast_exp2(x);
  } else {
    return exp2f(x);
  }
}

// The exponent offset of a running max m: m itself, or 0 while it is −inf (every key so far
// masked), so that 2^(t − offset) is 0 for the masked keys instead of NaN.
__device__ __forceinline__ float max_offset(float m) { return m == -INFINITY ? 0.f : m; }
// The same for a max in raw score units that the exponent scales (the prefill kernel keeps
// the max of the unscaled scores): m·scale, or 0 while m is −inf.
__device__ __forceinline__ float max_offset(float m, float scale) {
  return m == -INFINITY ? 0.f : m * scale;
}

// The weight 2^(m_part − m_ref) of a partial relative to its own max m_part in a merge
// relative to m_ref (the merged max, or its max_offset where that may be −inf).
template <Exp2Kind kExp>
__device__ __forceinline__ float partial_weight(float m_part, float m_ref) {
  return softmax_exp2<kExp>(m_part - m_ref);
}

// The merge of the unified combine's fallback, in double: relative to the row max m* (0 when
// it is not finite), no weight under- or overflows whatever the partials' maxima.
__device__ __forceinline__ double merge_ref_f64(float m_star) {
  return isfinite(m_star) ? m_star : 0.0;
}
__device__ __forceinline__ double partial_weight_f64(float m_part, double ref) {
  return exp2(static_cast<double>(m_part) - ref);
}

// One synchronized step's move to a new running max: m_new, its exponent offset (the tile's
// terms are p = 2^(t − offset)) and corr = 2^(m_old − offset), the rescale of everything
// accumulated before the step (0 on the first step, whose m_old is −inf: the accumulator and
// l are 0 anyway).
struct SoftmaxRescale {
  float m_new;
  float offset;
  float corr;
};

// The state itself is the caller's pair of fp32 registers (m, l), one per row it holds, or
// arrays of them, not a struct: a kernel keeps the variables (and so the register
// allocation) it has, and only the arithmetic is shared. The synchronized step is pure
// functions whose results the caller assigns; the unified updates take (m, l) by reference.
//   synchronized: m = the running max, l = Σ 2^(t − m);
//   unified:      m = the max seen (for the range check only), l = Σ 2^(t − φ).
__device__ __forceinline__ void softmax_init(float& m, float& l) { m = -INFINITY, l = 0.f; }

// ---- synchronized ----
// The step to the max of m and tile_max (the tile's max, already reduced over the lanes that
// share the row). The caller computes the tile's terms with softmax_p(t, r), rescales its
// accumulator by r.corr, and updates its state as
//   l = softmax_rescale_l(l, r) + sum;  m = r.m_new;
// (the product and the add fuse into one FMA, as everywhere with nvcc's default -fmad).
template <Exp2Kind kExp>
__device__ __forceinline__ SoftmaxRescale softmax_rescale(float m, float tile_max) {
  const float m_new = fmaxf(m, tile_max);
  const float offset = max_offset(m_new);
  return SoftmaxRescale{m_new, offset, softmax_exp2<kExp>(m - offset)};
}
// The prefill kernel's form: the caller has reduced the new running max m_new itself
// (starting from m_old), and both are raw scores the exponent scales: t = score·scale
// (scale > 0, so the max of the raw scores is the max of the scaled ones); the terms are
// softmax_p(score·scale, r).
template <Exp2Kind kExp>
__device__ __forceinline__ SoftmaxRescale softmax_rescale_scaled(float m_old, float m_new,
                                                                 float scale) {
  const float offset = max_offset(m_new, scale);
  return SoftmaxRescale{m_new, offset, softmax_exp2<kExp>(m_old * scale - offset)};
}
template <Exp2Kind kExp>
__device__ __forceinline__ float softmax_p(float t, const SoftmaxRescale& r) {
  return softmax_exp2<kExp>(t - r.offset);
}
// l, rescaled to the step's new max: l·corr (the new terms' sum is added by the caller).
__device__ __forceinline__ float softmax_rescale_l(float l, const SoftmaxRescale& r) {
  return l * r.corr;
}

// ---- unified ----
template <Exp2Kind kExp>
__device__ __forceinline__ float softmax_p_unified(float t, float phi) {
  return softmax_exp2<kExp>(t - phi);
}
__device__ __forceinline__ void softmax_observe(float& m, float t) { m = fmaxf(m, t); }
// One valid key: its score t and its term p_t.
__device__ __forceinline__ void softmax_add_unified(float& m, float& l, float t, float p_t) {
  m = fmaxf(m, t);
  l += p_t;
}
// Another unified partial of the same row (the same φ): no rescale.
__device__ __forceinline__ void softmax_merge_unified(float& m, float& l, float m_other,
                                                      float l_other) {
  m = fmaxf(m, m_other);
  l += l_other;
}

// ---- normalisation ----
// acc / l, 0 for an empty row (l = 0: attention over nothing is 0).
__device__ __forceinline__ float softmax_normalize(float acc, float l) {
  return l > 0.f ? acc / l : 0.f;
}
// 1 / l, to multiply a row's accumulators with; 0 for an empty row.
__device__ __forceinline__ float softmax_inv_l(float l) { return l > 0.f ? 1.f / l : 0.f; }
// acc / l where l > 0 and acc · l otherwise: a row recomputed from inputs that hold NaN has a
// NaN l, which then shows in the output as it should.
// (By reference: the operands load from shared memory in the caller's order, l first.)
__device__ __forceinline__ float softmax_normalize_keep_nan(const float& acc, const float& l) {
  return l > 0.f ? acc / l : acc * l;
}

}  // namespace fdpp::cuda
