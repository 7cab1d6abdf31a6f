// LayerNorm: out[t, :] = T((x[t, :] - mean) · rsqrt(var + eps) · weight + bias).
// Mean and (biased) variance are fp32, in two passes over the row: the variance as
// the mean of squared deviations, which does not cancel when the row's mean is
// large against its spread. The affine map is fp32 with one rounding at the store,
// which is what torch's half-precision LayerNorm kernel computes (fp32 accumulator
// type throughout), so there is no intermediate rounding to reproduce here.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/row_norm.cuh"

namespace fdpp::cuda {
namespace {

// kVec 8: 16-byte loads (hidden % 8 == 0, 16-byte aligned pointers); 1 otherwise.
// Each pass re-reads x (8 KB at hidden 4096: an L1/L2 hit) rather than holding a
// row of any width in registers. Reads of x complete before the same thread writes
// the same elements, so out may alias x.
template <class T, int kVec, bool kWarpPerRow>
__global__ void __launch_bounds__(row_norm::threads_per_cta(kWarpPerRow))
    layernorm_kernel(const LayerNormParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const auto [row, lane, stride] = row_norm::row_thread<kWarpPerRow>();
  if (row >= p.rows) return;  // warp per row: whole warps past the last row
  const T* x = static_cast<const T*>(p.x) + row * p.hidden;  // (hidden)
  const T* w = static_cast<const T*>(p.weight);              // (hidden)
  const T* b = static_cast<const T*>(p.bias);                // (hidden)
  T* out = static_cast<T*>(p.out) + row * p.hidden;          // (hidden)
  const int n_vec = p.hidden / kVec;
  const float inv_h = 1.f / static_cast<float>(p.hidden);

  float sum = 0.f;
  for (int i = lane; i < n_vec; i += stride) {
    float f[kVec];
    load_vec<T, kVec>(x + i * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum += f[e];
  }
  sum = row_norm::row_sum<kWarpPerRow>(sum);
  const float mean = sum * inv_h;
  // block_sum's shared slot is reused by the second reduction: every thread must
  // have read the first result before any thread writes its partial again.
  if constexpr (!kWarpPerRow) __syncthreads();

  float ss = 0.f;
  for (int i = lane; i < n_vec; i += stride) {
    float f[kVec];
    load_vec<T, kVec>(x + i * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float d = f[e] - mean;
      ss = fmaf(d, d, ss);
    }
  }
  ss = row_norm::row_sum<kWarpPerRow>(ss);
  const float r = rsqrtf(ss * inv_h + p.eps);

  for (int i = lane; i < n_vec; i += stride) {
    float f[kVec], g[kVec], c[kVec];
    load_vec<T, kVec>(x + i * kVec, f);
    load_vec<T, kVec>(w + i * kVec, g);
    load_vec<T, kVec>(b + i * kVec, c);
#pragma unroll
    for (int e = 0; e < kVec; ++e) f[e] = fmaf((f[e] - mean) * r, g[e], c[e]);
    store_vec<T, kVec>(out + i * kVec, f);
  }
}

template <class T, int kVec>
Status launch(const LayerNormParams& p, KernelStream stream) {
  return row_norm::launch_rows("layernorm", layernorm_kernel<T, kVec, true>,
                               layernorm_kernel<T, kVec, false>, kVec, p, stream);
}

template <class T>
Status dispatch(const LayerNormParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.hidden % 8 == 0 && addr(p.x) % 16 == 0 && addr(p.weight) % 16 == 0 &&
                   addr(p.bias) % 16 == 0 && addr(p.out) % 16 == 0;
  return vec ? launch<T, 8>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace

Status run_layernorm(const LayerNormParams& p, DType dtype, KernelStream stream) {
  if (p.rows <= 0 || p.hidden <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("layernorm: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
