// linear: y[m, n] (+)= Σ_k x[m, k] · w[n, k] + bias[n]  (y = x · wᵀ + b, PyTorch's F.linear).
#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status linear(const Tensor& x, const Tensor& w, const Tensor& y, const LinearEpilogue& ep) {
  constexpr const char* op = "linear";
  FDPP_RETURN_IF_ERROR(check_kind(op, "x", x, DType::kF32, 2));
  FDPP_RETURN_IF_ERROR(check_kind(op, "w", w, DType::kF32, 2));
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "w", w, DType::kF32, Shape{N, K}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "y", y, DType::kF32, Shape{M, N}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "w", w));
  const bool has_bias = !ep.bias.empty();
  if (has_bias) {
    FDPP_RETURN_IF_ERROR(check_tensor(op, "bias", ep.bias, DType::kF32, Shape{N}));
    FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "bias", ep.bias));
  }

  const float* xs = x.ptr<float>();  // (M, K)
  const float* ws = w.ptr<float>();  // (N, K)
  float* ys = y.ptr<float>();        // (M, N)
  const float* bs = has_bias ? ep.bias.ptr<float>() : nullptr;  // (N)
  // n outer: one weight row (≤ 44 KB at K = 11008) stays in cache while every
  // x row is dotted with it, so W is streamed from memory once per call.
#pragma omp parallel for schedule(static) if (M * N * K >= kParallelWork)
  for (int64_t n = 0; n < N; ++n) {
    const float* wn = ws + n * K;  // (K)
    for (int64_t m = 0; m < M; ++m) {
      const double acc = dot(xs + m * K, wn, K) + (bs ? static_cast<double>(bs[n]) : 0.0);
      float& out = ys[m * N + n];
      // The residual is added in double too: one rounding of the whole sum.
      out = static_cast<float>(ep.accumulate ? static_cast<double>(out) + acc : acc);
    }
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
