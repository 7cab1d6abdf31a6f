// Argument checks of CudaBackend's ops, in the CPU backend's message style ("layernorm:
// weight is f16[64] on cuda, expected f16[96] on cuda"). Host code only (uses fmt).
#pragma once

#include <fmt/format.h>

#include "backend/cuda/ops/ops.h"
#include "backend/arg_checks.h"
#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp::cuda::checks {

// dtype, device, exact shape and a usable pointer.
inline Status tensor(const char* op, const char* name, const Tensor& t, DType dtype,
                     const Shape& shape) {
  if (t.device != Device::kCUDA)
    return InvalidArgument(
        fmt::format("{}: {} is {}; the CUDA backend needs device memory", op, name, t.describe()));
  if (t.dtype != dtype || t.shape != shape)
    return InvalidArgument(fmt::format("{}: {} is {}, expected {}{} on cuda", op, name,
                                       t.describe(), dtype_name(dtype), shape.to_string()));
  if (t.numel() > 0 && t.data == nullptr)
    return InvalidArgument(fmt::format("{}: {} is {} with no data", op, name, t.describe()));
  return Status::Ok();
}

inline Status rank(const char* op, const char* name, const Tensor& t, int r) {
  if (t.rank() != r)
    return InvalidArgument(
        fmt::format("{}: {} is {}, expected rank {}", op, name, t.describe(), r));
  for (int i = 0; i < r; ++i)
    if (t.shape[i] < 0)
      return InvalidArgument(fmt::format("{}: {} has a negative dim: {}", op, name, t.describe()));
  return Status::Ok();
}

// The arguments of a row gather (embed, embed_add): i32 ids (T), a (V, H) table and a
// (T, H) output of the activation dtype, the output apart from the table. The ids are
// device data: the kernel never reads outside the table (an out-of-range id gives a zero
// row); the engine validates ids on the host before they get there.
inline Result<EmbeddingParams> gather(const char* op, const Tensor& ids, const Tensor& table,
                                      const Tensor& out, DType dtype) {
  FDPP_RETURN_IF_ERROR(rank(op, "ids", ids, 1));
  FDPP_RETURN_IF_ERROR(rank(op, "table", table, 2));
  const int64_t T = ids.size(0), V = table.size(0), H = table.size(1);
  FDPP_RETURN_IF_ERROR(tensor(op, "ids", ids, DType::kI32, Shape{T}));
  FDPP_RETURN_IF_ERROR(tensor(op, "table", table, dtype, Shape{V, H}));
  FDPP_RETURN_IF_ERROR(tensor(op, "out", out, dtype, Shape{T, H}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "table", table));
  EmbeddingParams p;
  p.ids = ids.ptr<int32_t>();
  p.table = table.data;
  p.out = out.data;
  p.n_tokens = T;
  p.vocab = V;
  p.hidden = H;
  return p;
}

}  // namespace fdpp::cuda::checks
