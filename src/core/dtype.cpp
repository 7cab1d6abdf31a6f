#include "core/dtype.h"

namespace fdpp {

bool parse_dtype(std::string_view s, DType* out) {
  if (s == "fp16" || s == "f16" || s == "float16") {
    *out = DType::kF16;
  } else if (s == "bf16" || s == "bfloat16") {
    *out = DType::kBF16;
  } else if (s == "fp32" || s == "f32" || s == "float32") {
    *out = DType::kF32;
  } else {
    return false;
  }
  return true;
}

}  // namespace fdpp
