#include "dispatch/plan_prefill.h"

#include <string>

namespace fdpp {

const char* prefill_kernel_name(PrefillKernel k) {
  return k == PrefillKernel::kTensorCore ? "mma" : "generic";
}

Status check_prefill_shape(const PrefillShape& s) {
  const auto str = [](int64_t v) { return std::to_string(v); };
  if (s.dtype != DType::kF16 && s.dtype != DType::kBF16)
    return Unsupported(std::string("attention_prefill: dtype ") + dtype_name(s.dtype) +
                       " (the CUDA kernels take f16 or bf16)");
  if (s.n_heads < 1 || s.n_kv_heads < 1 || s.n_heads % s.n_kv_heads != 0)
    return InvalidArgument("attention_prefill: q has " + str(s.n_heads) +
                           " heads, not a positive multiple of the cache's " +
                           str(s.n_kv_heads) + " KV heads");
  if (s.head_dim <= 0 || s.head_dim % 2 != 0 || s.head_dim > 256)
    return Unsupported("attention_prefill: head_dim " + str(s.head_dim) +
                       " (the CUDA kernels take even head_dim <= 256)");
  if (s.n_heads > 65535) return Unsupported("attention_prefill: more than 65535 heads");
  return Status::Ok();
}

Result<PrefillPlan> plan_prefill(const PrefillShape& s) {
  FDPP_RETURN_IF_ERROR(check_prefill_shape(s));
  PrefillPlan p;
  p.group = static_cast<int>(s.n_heads / s.n_kv_heads);
  p.kernel = s.aligned16 && (s.head_dim == 64 || s.head_dim == 128) ? PrefillKernel::kTensorCore
                                                                     : PrefillKernel::kGeneric;
  p.softmax = s.softmax;
  return p;
}

}  // namespace fdpp
