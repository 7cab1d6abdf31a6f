// silu_mul: out[m, f] = silu(gate_up[m, f]) * gate_up[m, F + f]  (Llama's gated MLP).
#include <cmath>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status silu_mul(const Tensor& gate_up, const Tensor& out) {
  constexpr const char* op = "silu_mul";
  FDPP_RETURN_IF_ERROR(check_kind(op, "gate_up", gate_up, DType::kF32, 2));
  const int64_t M = gate_up.size(0), F2 = gate_up.size(1);
  if (F2 % 2 != 0)
    return InvalidArgument(
        fmt::format("silu_mul: gate_up is {}; its width must be 2F (gate|up)", gate_up.describe()));
  const int64_t F = F2 / 2;
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{M, F}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "gate_up", gate_up));

  const float* gu = gate_up.ptr<float>();  // (M, 2F)
  float* o = out.ptr<float>();             // (M, F)
#pragma omp parallel for schedule(static) if (M * F >= kParallelWork)
  for (int64_t m = 0; m < M; ++m) {
    const float* g = gu + m * F2;  // (F) gate
    const float* u = g + F;        // (F) up
    for (int64_t f = 0; f < F; ++f) {
      // g / (1 + e^-g) has the right limits in fp32 at both ends: for g < -88,
      // e^-g overflows to inf and the quotient is -0; for large g it is g. (The
      // form g·e^g / (1 + e^g) would give inf/inf = NaN for g > 88.)
      const float s = g[f] / (1.0f + std::exp(-g[f]));
      o[m * F + f] = s * u[f];
    }
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
