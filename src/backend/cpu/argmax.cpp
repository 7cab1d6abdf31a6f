// argmax: ids[b] = the lowest v with logits[b, v] maximal.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status argmax(const Tensor& logits, const Tensor& ids) {
  constexpr const char* op = "argmax";
  FDPP_RETURN_IF_ERROR(check_kind(op, "logits", logits, DType::kF32, 2));
  const int64_t B = logits.size(0), V = logits.size(1);
  if (V == 0 && B > 0)
    return InvalidArgument(fmt::format("argmax: logits {} has no columns", logits.describe()));
  if (V > std::numeric_limits<int32_t>::max())
    return OutOfRange(fmt::format("argmax: logits {} has more columns than an i32 id can name",
                                  logits.describe()));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "ids", ids, DType::kI32, Shape{B}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "ids", ids, "logits", logits));

  const float* l = logits.ptr<float>();  // (B, V)
  int32_t* out = ids.ptr<int32_t>();     // (B)
#pragma omp parallel for schedule(static) if (B * V >= kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    const float* row = l + b * V;  // (V)
    // NaN is never the max (it compares false with everything, so a plain `>`
    // scan would instead depend on where the NaN sits); a row that is all NaN
    // gives 0. Strict `>` keeps the first of equal maxima, ±inf included.
    int64_t best = -1;
    for (int64_t v = 0; v < V; ++v) {
      if (std::isnan(row[v])) continue;
      if (best < 0 || row[v] > row[best]) best = v;
    }
    out[b] = static_cast<int32_t>(best < 0 ? 0 : best);
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
