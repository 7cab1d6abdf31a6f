// Argument checks shared by the CPU reference ops. Every message names the op
// and the offending tensor's describe(), so a model-forward bug reads as one
// line ("linear: w is f32[72, 100] on cpu, expected f32[72, 64]").
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/arg_checks.h"
#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp::cpu {

// dtype, device, rank and a usable pointer; the dims themselves are the caller's business.
// The CPU reference computes in f32 by design (it is the specification the CUDA kernels are
// checked against): f16/bf16 where f32 is expected is refused as Unsupported; any other dtype
// or device mismatch is the caller's mistake (InvalidArgument).
inline Status check_kind(const char* op, const char* name, const Tensor& t, DType dtype, int rank) {
  if (t.dtype != dtype) {
    const bool reduced_float =
        dtype == DType::kF32 && (t.dtype == DType::kF16 || t.dtype == DType::kBF16);
    std::string m = fmt::format("{}: {} is {}; the CPU backend needs {}", op, name, t.describe(),
                                dtype_name(dtype));
    return reduced_float ? Unsupported(std::move(m)) : InvalidArgument(std::move(m));
  }
  if (t.device != Device::kCPU)
    return InvalidArgument(
        fmt::format("{}: {} is {}; the CPU backend needs host memory", op, name, t.describe()));
  if (t.rank() != rank)
    return InvalidArgument(
        fmt::format("{}: {} is {}, expected rank {}", op, name, t.describe(), rank));
  for (int i = 0; i < rank; ++i)
    if (t.shape[i] < 0)
      return InvalidArgument(fmt::format("{}: {} has a negative dim: {}", op, name, t.describe()));
  if (t.numel() > 0 && t.data == nullptr)
    return InvalidArgument(fmt::format("{}: {} is {} with no data", op, name, t.describe()));
  return Status::Ok();
}

// check_kind plus an exact shape.
inline Status check_tensor(const char* op, const char* name, const Tensor& t, DType dtype,
                           const Shape& shape) {
  FDPP_RETURN_IF_ERROR(check_kind(op, name, t, dtype, shape.rank));
  if (t.shape != shape)
    return InvalidArgument(fmt::format("{}: {} is {}, expected {}{}", op, name, t.describe(),
                                       dtype_name(dtype), shape.to_string()));
  return Status::Ok();
}

// The arguments of a row gather out[t, :] (= or +=) table[ids[t], :]: i32 ids (T), an f32
// table (V, H), out (T, H) apart from both, and every id checked before anything is written
// (an error leaves out untouched). `table_name` names the table in the id error.
inline Status check_gather(const char* op, const Tensor& ids, const Tensor& table,
                           const Tensor& out, const char* table_name) {
  FDPP_RETURN_IF_ERROR(check_kind(op, "ids", ids, DType::kI32, 1));
  FDPP_RETURN_IF_ERROR(check_kind(op, "table", table, DType::kF32, 2));
  const int64_t T = ids.size(0), V = table.size(0), H = table.size(1);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{T, H}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "table", table));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "ids", ids));
  const int32_t* id = ids.ptr<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    if (id[t] < 0 || id[t] >= V)
      return OutOfRange(fmt::format("{}: id {} at position {} outside {} [0, {})", op, id[t], t,
                                    table_name, V));
  return Status::Ok();
}

// A KV cache the CPU ops can index: f32, on the host, buffers as large as the
// layout says, and `layer` inside it.
inline Status check_cache(const char* op, const KVCache* cache, int layer) {
  if (cache == nullptr) return InvalidArgument(fmt::format("{}: no KV cache", op));
  const KVCacheLayout& l = cache->layout;
  if (cache->dtype != DType::kF32)
    return Unsupported(
        fmt::format("{}: KV cache is {}; the CPU backend needs f32", op, dtype_name(cache->dtype)));
  if (l.n_layers <= 0 || l.n_slots <= 0 || l.n_kv_heads <= 0 || l.capacity <= 0 || l.head_dim <= 0)
    return InvalidArgument(fmt::format(
        "{}: bad KV cache layout (layers {}, slots {}, kv heads {}, capacity {}, head_dim {})", op,
        l.n_layers, l.n_slots, l.n_kv_heads, l.capacity, l.head_dim));
  // A hand-built layout may be absurd: multiply with overflow checks before comparing.
  uint64_t need = sizeof(float);
  bool overflow = false;
  for (int f : {l.n_layers, l.n_slots, l.n_kv_heads, l.capacity, l.head_dim})
    overflow |= __builtin_mul_overflow(need, static_cast<uint64_t>(f), &need);
  if (cache->k.device() != Device::kCPU || cache->v.device() != Device::kCPU ||
      cache->k.data() == nullptr || cache->v.data() == nullptr || overflow ||
      cache->k.bytes() < need || cache->v.bytes() < need)
    return InvalidArgument(fmt::format(
        "{}: KV cache buffers (k {} bytes on {}, v {} bytes on {}) do not hold {} bytes on cpu", op,
        cache->k.bytes(), device_name(cache->k.device()), cache->v.bytes(),
        device_name(cache->v.device()), need));
  if (layer < 0 || layer >= l.n_layers)
    return OutOfRange(fmt::format("{}: layer {} outside [0, {})", op, layer, l.n_layers));
  return Status::Ok();
}

}  // namespace fdpp::cpu
