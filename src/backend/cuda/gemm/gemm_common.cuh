// Device code shared by the custom GEMM kernels: the epilogue (bias, residual
// add, store) with the deterministic split-K fixup, and the tensor-core
// instructions of the flat GEMM. Included by the gemv / flat_gemm kernel headers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/gemm/gemm_params.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda::gemm {

// The end of a CTA's work: `red` (shared, fp32) holds its tile as red[m·ld + r]
// for W rows n0 + r, r < rows, m < p.m. Every thread of the CTA must call it.
//
// row_scale (shared, p.m floats, or null) multiplies row m's dot product before the
// bias: the GEMV's RMSNorm prologue leaves its per-row 1/rms to here.
//
// One split: y[m, n] = red + bias[n] (+ y[m, n]) in fp32, rounded once.
// Several: the tile goes to partial[split] and the CTA takes a ticket; the CTA
// with the last ticket sums partial[0..splits) in split order (deterministic),
// then finishes as above and resets the counter for the next launch. This is
// the threadFenceReduction pattern: each writer fences its partials before its
// atomic, so the last arriver, having seen every ticket, sees every partial;
// it reads them with ld.global.cg (L2), since L1 is not coherent across SMs.
template <class T, int kThreads>
__device__ __forceinline__ void store_tile(const GemmParams& p, const float* red, int ld, int n0,
                                           int rows, int tile, int split,
                                           const float* row_scale = nullptr) {
  T* y = static_cast<T*>(p.y);                       // (m, n)
  const T* bias = static_cast<const T*>(p.bias);     // (n) or null
  const int count = p.m * rows;
  // Consecutive threads take consecutive n: coalesced loads and stores along y's rows.
  auto finish = [&](float v, int m, int n) {
    if (row_scale != nullptr) v *= row_scale[m];
    if (bias != nullptr) v += to_float(bias[n]);
    const int64_t at = static_cast<int64_t>(m) * p.n + n;
    if (p.accumulate) v += to_float(y[at]);
    y[at] = from_float<T>(v);
  };
  if (p.splits <= 1) {
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) {
      const int m = i / rows, r = i - m * rows, n = n0 + r;
      if (n < p.n) finish(red[m * ld + r], m, n);
    }
    return;
  }

  const int64_t split_stride = static_cast<int64_t>(p.m) * p.n;  // one split's (m, n) partials
  float* mine = p.partial + split * split_stride;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) {
    const int m = i / rows, r = i - m * rows, n = n0 + r;
    if (n < p.n) mine[static_cast<int64_t>(m) * p.n + n] = red[m * ld + r];
  }
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) last = atomicAdd(p.counters + tile, 1) == p.splits - 1;
  __syncthreads();
  if (!last) return;  // uniform across the CTA
  __threadfence();
  for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) {
    const int m = i / rows, r = i - m * rows, n = n0 + r;
    if (n >= p.n) continue;
    const float* src = p.partial + static_cast<int64_t>(m) * p.n + n;
    float v = 0.f;
    for (int s = 0; s < p.splits; ++s) v += __ldcg(src + s * split_stride);
    finish(v, m, n);
  }
  // Every split of this tile has taken its ticket: nobody reads the counter again
  // in this launch, and the next launch is stream-ordered after this store.
  if (threadIdx.x == 0) p.counters[tile] = 0;
}

}  // namespace fdpp::cuda::gemm
