// The prefill-attention launch decision as a pure function: the tensor-core kernel
// (FlashAttention-2 style, prefill_kernel.cuh) where its instantiations and its cp.async
// copies allow, else the generic SIMT kernel, and the softmax policy. CUDA-free, so the CPU
// tests pin it down; attention/prefill.cu executes what it returns.
//
// The grid is (n_heads, ceil(T / 128)) whatever the GPU, so the plan takes no device
// traits yet; the SM count becomes its input when a smaller Q tile (or a KV split) serves a
// grid under one wave.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "dispatch/softmax_policy.h"
#include "fdpp/status.h"

namespace fdpp {

// kTensorCore: head_dim 64/128 (mma.sync m16n8k16, prefill_d*.cu), 16-byte aligned q, out,
//   k and v (cp.async moves 16-byte chunks).
// kGeneric: any even head_dim <= 256, 4-byte aligned pointers (prefill_generic.cu).
enum class PrefillKernel : uint8_t { kTensorCore, kGeneric };
const char* prefill_kernel_name(PrefillKernel k);  // "mma", "generic"

struct PrefillShape {
  int64_t n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  DType dtype = DType::kF16;
  bool aligned16 = true;  // q, out, k and v 16-byte aligned
  SoftmaxPolicy softmax = SoftmaxPolicy::kSynchronized;
};

struct PrefillPlan {
  PrefillKernel kernel = PrefillKernel::kGeneric;
  int group = 1;  // n_heads / n_kv_heads: query head h reads KV head h / group
  SoftmaxPolicy softmax = SoftmaxPolicy::kSynchronized;  // both kernels have both policies
  bool operator==(const PrefillPlan&) const = default;
};

// What no prefill kernel takes: Unsupported for a dtype other than f16/bf16, a head_dim that
// is odd or above 256, more than 65535 heads (gridDim.y); InvalidArgument for heads that are
// not a positive multiple of the KV heads.
Status check_prefill_shape(const PrefillShape& s);

// check_prefill_shape, then the choice.
Result<PrefillPlan> plan_prefill(const PrefillShape& s);

}  // namespace fdpp
