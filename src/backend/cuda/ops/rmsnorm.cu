// RMSNorm: out[t, :] = weight · T(x[t, :] · rsqrt(mean(x[t, :]²) + eps)).
// The sum of squares is fp32; the normalised row is rounded to the activation
// type before the weight multiplies it, which is exactly Hugging Face's
// `weight * hidden.to(input_dtype)` (a product of two 16-bit values is exact in
// fp32, so one more rounding reproduces the half-precision multiply).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/norm_gate_math.cuh"
#include "backend/cuda/ops/ops.h"
#include "backend/cuda/ops/row_norm.cuh"

namespace fdpp::cuda {
namespace {

// kVec 8: 16-byte loads (hidden % 8 == 0, 16-byte aligned pointers); 1 otherwise.
// The second pass re-reads x (8 KB at hidden 4096: an L1/L2 hit) rather than
// holding a row of any width in registers. Reads of x complete before the
// same thread writes the same elements, so out may alias x.
template <class T, int kVec, bool kWarpPerRow>
__global__ void __launch_bounds__(row_norm::threads_per_cta(kWarpPerRow))
    rmsnorm_kernel(const RmsNormParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const auto [row, lane, stride] = row_norm::row_thread<kWarpPerRow>();
  if (row >= p.rows) return;  // warp per row: whole warps past the last row
  const T* x = static_cast<const T*>(p.x) + row * p.hidden;  // (hidden)
  const T* w = static_cast<const T*>(p.weight);              // (hidden)
  T* out = static_cast<T*>(p.out) + row * p.hidden;          // (hidden)
  const int n_vec = p.hidden / kVec;

  float ss = 0.f;
  for (int i = lane; i < n_vec; i += stride) {
    float f[kVec];
    load_vec<T, kVec>(x + i * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e) ss = fmaf(f[e], f[e], ss);
  }
  ss = row_norm::row_sum<kWarpPerRow>(ss);
  const float r = rms_inverse(ss, p.hidden, p.eps);

  for (int i = lane; i < n_vec; i += stride) {
    float f[kVec], g[kVec];
    load_vec<T, kVec>(x + i * kVec, f);
    load_vec<T, kVec>(w + i * kVec, g);
#pragma unroll
    for (int e = 0; e < kVec; ++e) f[e] = rms_scaled<T>(f[e], r, g[e]);
    store_vec<T, kVec>(out + i * kVec, f);
  }
}

template <class T, int kVec>
Status launch(const RmsNormParams& p, KernelStream stream) {
  return row_norm::launch_rows("rmsnorm", rmsnorm_kernel<T, kVec, true>,
                               rmsnorm_kernel<T, kVec, false>, kVec, p, stream);
}

template <class T>
Status dispatch(const RmsNormParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.hidden % 8 == 0 && addr(p.x) % 16 == 0 && addr(p.weight) % 16 == 0 &&
                   addr(p.out) % 16 == 0;
  return vec ? launch<T, 8>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace

Status run_rmsnorm(const RmsNormParams& p, DType dtype, KernelStream stream) {
  if (p.rows <= 0 || p.hidden <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("rmsnorm: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
