// The softmax policies of the tensor-core prefill kernel (prefill_kernel.cuh): the per-tile
// step that turns a tile of scores (mma C fragments) into P, synchronized (running row max,
// O rescaled) or unified-max (2^(t - φ), nothing rescaled; design.md, Technique 1).
#pragma once

#include <cuda_runtime.h>

#include "dispatch/softmax_policy.h"
#include "dispatch/softmax_range.h"
#include "backend/cuda/attention/softmax_state.cuh"
#include "backend/cuda/ptx.cuh"
#include "core/dtype.h"

namespace fdpp::cuda::prefill {

// ---- softmax policies -----------------------------------------------------------------------
// Per thread: rows g and g+8 (h = 0, 1) of each of the warp's m16 tiles (g = lane/4). m is the
// running max of the *unscaled* scores (scale > 0, so it is also the max of the scaled ones);
// l is this thread's partial row sum (its 2 columns per n8 tile), reduced over the quad of
// lanes that share the row only once, at the end, since the rescale factor is per row.
template <int kMT>
struct RowState {
  float m[kMT][2];
  float l[kMT][2];
};

template <SoftmaxPolicy kPolicy>
struct OnlineSoftmax;

template <>
struct OnlineSoftmax<SoftmaxPolicy::kSynchronized> {
  // s (kMT, kNT, 4): this tile's raw scores in the C-fragment layout, masked ones -inf.
  // Afterwards s holds P = exp(scale·(s - m_new)) in [0, 1] (unnormalised); o and l are
  // rescaled from the old running max to the new one.
  template <int kMT, int kNT, int kDT>
  static __device__ __forceinline__ void step(float (&s)[kMT][kNT][4], float (&o)[kMT][kDT][4],
                                              RowState<kMT>& st, float scale_log2) {
    // offset: the new running max times scale_log2 (the exponent offset); corr (alpha):
    // exp(scale·(m_old - m_new)), which rescales o and l.
    SoftmaxRescale rs[kMT][2];
    bool changed = false;
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = st.m[mi][h];
#pragma unroll
        for (int nj = 0; nj < kNT; ++nj)
          mx = fmaxf(mx, fmaxf(s[mi][nj][2 * h], s[mi][nj][2 * h + 1]));
        // The 4 lanes of a quad hold the 4 column pairs of the same row.
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row whose keys so far are all masked has mx = -inf: the offset is 0 (max_offset).
        // Old max -inf (first tile): alpha = exp2(-inf) = 0, and o, l are 0 anyway.
        rs[mi][h] = softmax_rescale_scaled<Exp2Kind::kMufu>(st.m[mi][h], mx, scale_log2);
        changed |= mx != st.m[mi][h];
        st.m[mi][h] = mx;
      }
    }
    // Rescaling o costs one FMUL per accumulator (as many as a quarter of the tile's mmas);
    // once the running max has settled most tiles leave every row's max unchanged (alpha would
    // be exactly 1), so the warp skips it. The vote keeps the branch warp-uniform.
    if (__any_sync(0xffffffffu, changed)) {
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
        for (int dj = 0; dj < kDT; ++dj)
#pragma unroll
          for (int e = 0; e < 4; ++e) o[mi][dj][e] *= rs[mi][e >> 1].corr;
    }
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float sum = 0.f;
#pragma unroll
        for (int nj = 0; nj < kNT; ++nj) {
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            // One FFMA + one MUFU per score: the scale is folded into the exponent base.
            const float pr = softmax_p<Exp2Kind::kMufu>(s[mi][nj][e] * scale_log2, rs[mi][h]);
            s[mi][nj][e] = pr;
            sum += pr;
          }
        }
        st.l[mi][h] = softmax_rescale_l(st.l[mi][h], rs[mi][h]) + sum;
      }
    }
  }
};
template <>
struct OnlineSoftmax<SoftmaxPolicy::kUnifiedMax> {
  // s (kMT, kNT, 4): this tile's biased scores q·k - φ/scale_log2 of the row's φ, masked ones
  // -inf. Afterwards s holds P = 2^(scale_log2·s) = 2^(t - φ): softmax(x) = e^(x-φ)/Σe^(x-φ)
  // for any φ, so nothing already accumulated in o or l changes. st.m keeps this thread's max
  // biased score of each row and st.l its part of the row's Σ P; both are reduced over the
  // quad once, after the last tile. P is then rounded to the element type for the P·V mma,
  // where fp16 overflows past 65504: the range check catches every row that came near it.
  template <int kMT, int kNT, int kDT>
  static __device__ __forceinline__ void step(float (&s)[kMT][kNT][4],
                                              float (&)[kMT][kDT][4] /* o: never rescaled */,
                                              RowState<kMT>& st, float scale_log2) {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = st.m[mi][h], sum = st.l[mi][h];
#pragma unroll
        for (int nj = 0; nj < kNT; ++nj) {
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            softmax_observe(mx, s[mi][nj][e]);
            // The bias in s is -φ/scale_log2: 2^(scale_log2·s) = 2^(t - φ).
            const float pr = softmax_exp2<Exp2Kind::kMufu>(s[mi][nj][e] * scale_log2);
            s[mi][nj][e] = pr;
            sum += pr;
          }
        }
        st.m[mi][h] = mx;
        st.l[mi][h] = sum;
      }
    }
  }
};

// The range of the unified softmax for the type P is rounded to before the P·V mma.
template <DType kDType>
constexpr UnifiedType kPRange = kDType == DType::kF16 ? UnifiedType::kF16P : UnifiedType::kBF16P;

}  // namespace fdpp::cuda::prefill
