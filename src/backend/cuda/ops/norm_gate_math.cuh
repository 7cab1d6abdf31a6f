// The per-element formulas of RMSNorm and of the SiLU gate, shared by the standalone
// ops (ops/rmsnorm.cu, ops/silu_mul.cu) and by the GEMV that applies them while it
// loads x (gemm/gemv_kernel.cuh), so the fused and the unfused paths round alike.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda {

// 1 / sqrt(mean(x²) + eps) from the row's fp32 sum of squares.
__device__ __forceinline__ float rms_inverse(float sum_sq, int hidden, float eps) {
  return rsqrtf(sum_sq / static_cast<float>(hidden) + eps);
}

// weight · T(x · r): the normalised element is rounded to T before the weight multiplies
// it, which is Hugging Face's `weight * hidden.to(input_dtype)` (a product of two 16-bit
// values is exact in fp32, so the caller's one rounding reproduces the 16-bit multiply).
template <class T>
__device__ __forceinline__ float rms_scaled(float x, float r, float weight) {
  return weight * round_through<T>(x * r);
}

// T(silu(g)) · u: silu in fp32 and stored, then a 16-bit multiply (Hugging Face's
// `act_fn(gate) * up`); the caller rounds the product. For g < -88, e^-g is inf and
// the quotient -0, the right limit.
template <class T>
__device__ __forceinline__ float silu_gated(float g, float u) {
  return round_through<T>(g / (1.f + expf(-g))) * u;
}

}  // namespace fdpp::cuda
