// The argument checks both backends run on their ops. Host code only (uses fmt).
#pragma once

#include <cmath>

#include <fmt/format.h>

#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp {

// An output must not share memory with an input unless the op says so: the CPU loops
// and the CUDA kernels read inputs after writing outputs, so an overlap silently
// corrupts the result.
inline Status check_no_overlap(const char* op, const char* out_name, const Tensor& out,
                               const char* in_name, const Tensor& in) {
  if (out.nbytes() == 0 || in.nbytes() == 0) return Status::Ok();
  const auto* o = static_cast<const char*>(out.data);
  const auto* i = static_cast<const char*>(in.data);
  if (o < i + in.nbytes() && i < o + out.nbytes())
    return InvalidArgument(fmt::format("{}: {} ({}) overlaps {} ({})", op, out_name, out.describe(),
                                       in_name, in.describe()));
  return Status::Ok();
}

// A normalisation's eps (RMSNorm, LayerNorm): finite and >= 0; NaN is refused too.
inline Status check_norm_eps(const char* op, float eps) {
  if (!(eps >= 0.0f) || std::isinf(eps))
    return InvalidArgument(fmt::format("{}: eps {} must be finite and >= 0", op, eps));
  return Status::Ok();
}

}  // namespace fdpp
