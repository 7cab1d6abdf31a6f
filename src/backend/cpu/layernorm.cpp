// layernorm: out[t, :] = (x[t, :] - mean) / sqrt(var + eps) * weight + bias, with the
// biased variance of the row (torch.nn.LayerNorm over the last dimension).
#include <cmath>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                 const Tensor& out) {
  constexpr const char* op = "layernorm";
  FDPP_RETURN_IF_ERROR(check_kind(op, "x", x, DType::kF32, 2));
  const int64_t T = x.size(0), H = x.size(1);
  FDPP_RETURN_IF_ERROR(check_norm_eps(op, eps));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "weight", weight, DType::kF32, Shape{H}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "bias", bias, DType::kF32, Shape{H}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{T, H}));
  // In place (out == x) is fine: a row is read whole before it is written.
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "weight", weight));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "bias", bias));

  const float* xs = x.ptr<float>();      // (T, H)
  const float* w = weight.ptr<float>();  // (H)
  const float* b = bias.ptr<float>();    // (H)
  float* o = out.ptr<float>();           // (T, H)
#pragma omp parallel for schedule(static) if (T * H >= kParallelWork)
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = xs + t * H;  // (H)
    float* orow = o + t * H;       // (H)
    // Two passes in double: the variance as the mean of squared deviations, which
    // (unlike E[x²] - E[x]²) does not cancel when the mean is large against the
    // spread, as it is in OPT's residual stream.
    double sum = 0.0;
    for (int64_t i = 0; i < H; ++i) sum += xr[i];
    const double mean = H > 0 ? sum / static_cast<double>(H) : 0.0;
    double ss = 0.0;
    for (int64_t i = 0; i < H; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const double var = H > 0 ? ss / static_cast<double>(H) : 0.0;
    const double r = 1.0 / std::sqrt(var + static_cast<double>(eps));
    // torch computes the whole affine map in fp32 and rounds once; in double, the
    // single rounding is the store.
    for (int64_t i = 0; i < H; ++i)
      orow[i] = static_cast<float>((xr[i] - mean) * r * w[i] + static_cast<double>(b[i]));
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
