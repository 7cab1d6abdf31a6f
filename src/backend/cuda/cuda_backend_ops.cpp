// CudaBackend's ops of the LayerNorm / plain-MLP / learned-position models (OPT):
// argument checks against the op contract (backend/backend.h), then the launcher of
// ops/<op>.cu. Kept apart from cuda_backend.cpp so neither file outgrows one sitting.
#include <cmath>

#include <fmt/format.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/op_checks.h"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {

Status CudaBackend::layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              float eps, const Tensor& out) {
  constexpr const char* op = "layernorm";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(checks::rank(op, "x", x, 2));
  const int64_t T = x.size(0), H = x.size(1);
  FDPP_RETURN_IF_ERROR(check_norm_eps(op, eps));
  if (H > 0x7fffffff) return OutOfRange(fmt::format("layernorm: hidden size {} too large", H));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "x", x, dtype_, Shape{T, H}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "weight", weight, dtype_, Shape{H}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "bias", bias, dtype_, Shape{H}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "out", out, dtype_, Shape{T, H}));
  // In place (out == x) is fine: each element is read before the same thread writes it.
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "weight", weight));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "bias", bias));
  LayerNormParams p;
  p.x = x.data;
  p.weight = weight.data;
  p.bias = bias.data;
  p.out = out.data;
  p.rows = T;
  p.hidden = static_cast<int>(H);
  p.eps = eps;
  return run_layernorm(p, dtype_, kernel_stream());
}

Status CudaBackend::embed_add(const Tensor& ids, const Tensor& table, const Tensor& out) {
  constexpr const char* op = "embed_add";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_ASSIGN_OR_RETURN(const EmbeddingParams p, checks::gather(op, ids, table, out, dtype_));
  return run_embed_add(p, dtype_, kernel_stream());
}

Status CudaBackend::activation(const Tensor& x, const Tensor& out, Activation act) {
  constexpr const char* op = "activation";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(checks::rank(op, "x", x, 2));
  const int64_t M = x.size(0), N = x.size(1);
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "x", x, dtype_, Shape{M, N}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "out", out, dtype_, Shape{M, N}));
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  if (act != Activation::kRelu && act != Activation::kGelu)
    return InvalidArgument(fmt::format("activation: unknown kind {}", static_cast<int>(act)));
  ActivationParams p;
  p.x = x.data;
  p.out = out.data;
  p.n = M * N;
  p.kind = act;
  return run_activation(p, dtype_, kernel_stream());
}

}  // namespace fdpp::cuda
