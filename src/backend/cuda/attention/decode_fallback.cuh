// The exact fallback of the unified decode kernels: one row's synchronized (online-softmax)
// partial over a key range, recomputed by a whole CTA from the KV cache. It runs only for
// rows whose max left φ's safe range (dispatch/softmax_range.h), so it is written for
// clarity, not speed: 32 keys per step, one warp per key's dot product, fp32 throughout.
// Used by the split kernels when one split holds the whole row (decode_kernel.cuh,
// decode_mma_kernel.cuh, decode_generic.cuh) and by the unified combine for the splits it distrusts.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/decode_common.cuh"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda::decode {

constexpr int kFallbackKeys = 32;  // keys per step: one per lane of the warp that normalises
static_assert(kDecodeMaxHeadDim <= 2 * kThreads, "a thread accumulates at most two dims");

// Shared memory of one recompute (~2.2 KB); the split kernels alias it onto their K stages.
struct FallbackSmem {
  float q[kDecodeMaxHeadDim];    // (head_dim): q · scale · log2(e)
  float acc[kDecodeMaxHeadDim];  // (head_dim): the result's Σ 2^(t - m)·v
  float p[kFallbackKeys];        // (keys): this step's scores, then 2^(t - m)
  float corr;                    // this step's rescale 2^(m_old - m_new)
  float m;                       // the result's max t (log2 units); -inf for no keys
  float l;                       // the result's Σ 2^(t - m)
};

// The synchronized partial of query row q_row (head_dim elements) over keys [begin, end)
// of the (slot, kv head) at kv_offset: sm.m, sm.l and sm.acc hold it on return. Every
// thread of the CTA (kThreads) must call it; it begins and ends with a barrier.
template <class T>
__device__ void sync_partial(const DecodeParams& p, int64_t kv_offset, const T* q_row, int begin,
                             int end, FallbackSmem& sm) {
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int D = p.head_dim, DP = D / 2;
  __syncthreads();  // the caller may still read sm from a previous call
  for (int d = tid; d < D; d += kThreads) sm.q[d] = to_float(q_row[d]) * p.scale_log2;
  // (capacity, D/2) words and (capacity, D) elements of (slot, kv head); the launcher
  // checked 4-byte alignment of K and V.
  const uint32_t* kg = reinterpret_cast<const uint32_t*>(static_cast<const T*>(p.k) + kv_offset);
  const T* vg = static_cast<const T*>(p.v) + kv_offset;
  float acc0 = 0.f, acc1 = 0.f;  // dims tid and tid + kThreads
  float m = -INFINITY, l = 0.f;  // warp 0's running max and sum (the same in all its lanes)
  __syncthreads();
  for (int c0 = begin; c0 < end; c0 += kFallbackKeys) {
    const int n = min(kFallbackKeys, end - c0);
    // Scores: warp w takes keys w, w + kWarps, ...; its lanes split the dim pairs.
    for (int k = warp; k < kFallbackKeys; k += kWarps) {
      float s = 0.f;
      if (k < n) {
        const uint32_t* kr = kg + static_cast<int64_t>(c0 + k) * DP;
        for (int c = lane; c < DP; c += 32) {
          const float2 kf = unpack2<T>(kr[c]);
          s = fmaf(sm.q[2 * c], kf.x, s);
          s = fmaf(sm.q[2 * c + 1], kf.y, s);
        }
      }
      s = warp_sum(s);
      if (lane == 0) sm.p[k] = k < n ? s : -INFINITY;
    }
    __syncthreads();
    if (warp == 0) {
      const float t = sm.p[lane];
      const SoftmaxRescale r = softmax_rescale<Exp2Kind::kExact>(m, warp_max(t));
      const float pk = softmax_p<Exp2Kind::kExact>(t, r);
      sm.p[lane] = pk;
      l = softmax_rescale_l(l, r) + warp_sum(pk);
      m = r.m_new;
      if (lane == 0) sm.corr = r.corr;
    }
    __syncthreads();
    const float corr = sm.corr;
    acc0 *= corr;
    acc1 *= corr;
    // Only keys < n are read: positions past the row's end may hold stale data (NaN).
    for (int k = 0; k < n; ++k) {
      const float pk = sm.p[k];
      const T* vr = vg + static_cast<int64_t>(c0 + k) * D;
      if (tid < D) acc0 = fmaf(pk, to_float(vr[tid]), acc0);
      if (tid + kThreads < D) acc1 = fmaf(pk, to_float(vr[tid + kThreads]), acc1);
    }
    __syncthreads();  // sm.p and sm.corr are rewritten by the next step
  }
  if (tid == 0) {
    sm.m = m;
    sm.l = l;
  }
  if (tid < D) sm.acc[tid] = acc0;
  if (tid + kThreads < D) sm.acc[tid + kThreads] = acc1;
  __syncthreads();
}

// The end of a unified split kernel whose one split is the whole row (num_splits == 1),
// after it stored every output and every head's row max (store_row_max): the heads whose
// check failed (bad[g] != 0) are recomputed synchronized and overwrite their output and row
// max. Called by every thread; bad is shared memory.
template <class T>
__device__ void finish_single_split(const DecodeParams& p, const CtaWork& w, const int* bad,
                                    FallbackSmem& sm) {
  const int tid = static_cast<int>(threadIdx.x);
  // The caller's store loop may still be setting bad[] (an output that overflowed): every
  // thread must see the final flags before deciding, or the CTA would split at a barrier.
  __syncthreads();
  for (int g = 0; g < w.gc; ++g) {
    const int h = w.h0 + g;
    const int64_t row = static_cast<int64_t>(w.b) * p.n_heads + h;
    if (bad[g]) {  // uniform: shared memory, final since the barrier above
      const T* q_row = static_cast<const T*>(p.q) + row * p.head_dim;
      sync_partial<T>(p, w.kv_offset, q_row, w.begin, w.end, sm);
      T* out = static_cast<T*>(p.out) + row * p.head_dim;  // (head_dim)
      // l >= 1 unless the inputs hold NaN, which then shows in the output as it should.
      for (int d = tid; d < p.head_dim; d += kThreads)
        out[d] = from_float<T>(softmax_normalize_keep_nan(sm.acc[d], sm.l));
      if (tid == 0) {
        if (p.fallbacks != nullptr) atomicAdd(p.fallbacks, 1u);
        store_row_max(p, w, g, sm.m);
      }
    }
  }
}

}  // namespace fdpp::cuda::decode
