// embed: out[t, :] = table[ids[t], :].
#include <cstring>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status embed(const Tensor& ids, const Tensor& table, const Tensor& out) {
  constexpr const char* op = "embed";
  FDPP_RETURN_IF_ERROR(check_gather(op, ids, table, out, "the vocabulary"));
  const int64_t T = ids.size(0), H = table.size(1);
  const int32_t* id = ids.ptr<int32_t>();  // (T), all in range
  const float* tab = table.ptr<float>();    // (V, H)
  float* o = out.ptr<float>();              // (T, H)
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(o + t * H, tab + static_cast<int64_t>(id[t]) * H, H * sizeof(float));
  return Status::Ok();
}

}  // namespace fdpp::cpu
