// rmsnorm: out[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * weight.
#include <cmath>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  constexpr const char* op = "rmsnorm";
  FDPP_RETURN_IF_ERROR(check_kind(op, "x", x, DType::kF32, 2));
  const int64_t T = x.size(0), H = x.size(1);
  FDPP_RETURN_IF_ERROR(check_norm_eps(op, eps));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "weight", weight, DType::kF32, Shape{H}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{T, H}));
  // In place (out == x) is fine: a row is read whole before it is written.
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "weight", weight));

  const float* xs = x.ptr<float>();      // (T, H)
  const float* w = weight.ptr<float>();  // (H)
  float* o = out.ptr<float>();           // (T, H)
#pragma omp parallel for schedule(static) if (T * H >= kParallelWork)
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = xs + t * H;  // (H)
    float* orow = o + t * H;       // (H)
    // The sum of squares in double (HF uses fp32; double makes this the exact
    // reference up to one rounding of the scale factor).
    double ss = 0.0;
    for (int64_t i = 0; i < H; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double mean = H > 0 ? ss / static_cast<double>(H) : 0.0;
    const float r = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
    // HF's order: weight * (x * rsqrt(var + eps)), each product rounded in fp32.
    for (int64_t i = 0; i < H; ++i) orow[i] = w[i] * (xr[i] * r);
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
