// embed_add: out[t, :] += table[ids[t], :] (OPT's learned positions into the residual stream).
#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status embed_add(const Tensor& ids, const Tensor& table, const Tensor& out) {
  constexpr const char* op = "embed_add";
  FDPP_RETURN_IF_ERROR(check_kind(op, "ids", ids, DType::kI32, 1));
  FDPP_RETURN_IF_ERROR(check_kind(op, "table", table, DType::kF32, 2));
  const int64_t T = ids.size(0), V = table.size(0), H = table.size(1);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{T, H}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "table", table));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "ids", ids));

  const int32_t* id = ids.ptr<int32_t>();  // (T)
  // Every id is checked before anything is written: an error leaves out untouched.
  for (int64_t t = 0; t < T; ++t)
    if (id[t] < 0 || id[t] >= V)
      return OutOfRange(fmt::format("embed_add: id {} at position {} outside the table [0, {})",
                                    id[t], t, V));
  const float* tab = table.ptr<float>();  // (V, H)
  float* o = out.ptr<float>();            // (T, H)
  for (int64_t t = 0; t < T; ++t) {
    const float* row = tab + static_cast<int64_t>(id[t]) * H;  // (H)
    for (int64_t i = 0; i < H; ++i) o[t * H + i] += row[i];   // one correctly rounded add
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
