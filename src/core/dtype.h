// Element types fdpp stores and computes with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fdpp {

enum class DType : uint8_t { kF32, kF16, kBF16, kI32 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
  }
  return "?";
}

// Parses the CLI spelling ("fp16", "f16", "float16", "bf16", "bfloat16", "fp32", "f32", "float32").
bool parse_dtype(std::string_view s, DType* out);

}  // namespace fdpp
