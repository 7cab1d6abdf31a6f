// activation: out = act(x) elementwise, for the plain MLP of OPT (ReLU) and GeLU models.
#include <cmath>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status activation(const Tensor& x, const Tensor& out, Activation act) {
  constexpr const char* op = "activation";
  FDPP_RETURN_IF_ERROR(check_kind(op, "x", x, DType::kF32, 2));
  const int64_t M = x.size(0), N = x.size(1);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{M, N}));
  // In place is fine (each element is read before it is written); a partial overlap is not.
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  if (act != Activation::kRelu && act != Activation::kGelu)
    return InvalidArgument(fmt::format("activation: unknown kind {}", static_cast<int>(act)));

  const float* xs = x.ptr<float>();  // (M, N)
  float* o = out.ptr<float>();       // (M, N)
  const int64_t n = M * N;
  if (act == Activation::kRelu) {
    // `x < 0 ? 0 : x` keeps NaN a NaN, as torch.relu does (std::max(x, 0) would not).
    for (int64_t i = 0; i < n; ++i) o[i] = xs[i] < 0.0f ? 0.0f : xs[i];
    return Status::Ok();
  }
  // GeLU with the exact erf (torch's default approximate='none'), in double.
#pragma omp parallel for schedule(static) if (n >= kParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const double v = xs[i];
    o[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
