// The aliasing check both backends run on op arguments. Host code only (uses fmt).
#pragma once

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

}  // namespace fdpp
