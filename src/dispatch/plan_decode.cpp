#include "dispatch/plan_decode.h"

#include <algorithm>

#include <fmt/format.h>

namespace fdpp {
namespace {

constexpr size_t kWorkspaceAlign = 256;
size_t align_up(size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// The unified fast kernels are instantiated for the head dims of the models they are
// measured on (64, 128: Llama, OPT, ChatGLM2); head_dim 256 keeps the synchronized CUDA-core
// kernel (exact either way), and the generic kernel has both policies.
bool has_unified_fast(int head_dim) { return head_dim == 64 || head_dim == 128; }

Status check_shape(const DecodeShape& s) {
  constexpr const char* op = "attention_decode";
  if (s.dtype != DType::kF16 && s.dtype != DType::kBF16)
    return Unsupported(fmt::format("{}: dtype {} (f16 or bf16)", op, dtype_name(s.dtype)));
  if (s.batch < 0 || s.max_length < 0 || s.n_kv_heads < 1 || s.n_heads < 1 ||
      s.n_heads % s.n_kv_heads != 0)
    return InvalidArgument(fmt::format("{}: inconsistent shape (batch {}, heads {}, kv heads {}, "
                                       "max_length {})",
                                       op, s.batch, s.n_heads, s.n_kv_heads, s.max_length));
  if (s.head_dim < 2 || s.head_dim > kDecodeMaxHeadDim || s.head_dim % 2 != 0)
    return Unsupported(fmt::format("{}: head_dim {} (the kernels take even head_dim <= {})", op,
                                   s.head_dim, kDecodeMaxHeadDim));
  return Status::Ok();
}

}  // namespace

const char* decode_kernel_name(DecodeKernel k) {
  switch (k) {
    case DecodeKernel::kGeneric: return "generic";
    case DecodeKernel::kCudaCore: return "cuda-core";
    case DecodeKernel::kTensorCore: return "mma";
    case DecodeKernel::kTensorCoreWide: return "mma-wide";
  }
  return "?";
}

DecodeKernel decode_kernel_family(const DecodeShape& s, int sm_arch) {
  const bool fast = s.aligned16 && decode_head_dim_has_fast_kernel(s.head_dim);
  if (!fast) return DecodeKernel::kGeneric;
  return decode_uses_tensor_cores(sm_arch, s.head_dim, fast) ? DecodeKernel::kTensorCore
                                                             : DecodeKernel::kCudaCore;
}

int decode_occupancy_slot(DecodeKernel family, int head_dim) {
  if (family == DecodeKernel::kGeneric) return 0;
  const bool tensor_cores = family != DecodeKernel::kCudaCore;
  return (tensor_cores ? 3 : 0) + (head_dim == 64 ? 1 : head_dim == 128 ? 2 : 3);
}

Result<DecodePlan> plan_decode(const DecodeShape& s, const DecodeDeviceTraits& traits,
                               const DecodePolicy& policy) {
  FDPP_RETURN_IF_ERROR(check_shape(s));
  const DecodeKernel family = decode_kernel_family(s, traits.sm_arch);
  const bool fast = family != DecodeKernel::kGeneric;
  const bool tensor_cores = family == DecodeKernel::kTensorCore;
  DecodePlan p;
  p.group = s.n_heads / s.n_kv_heads;
  p.head_groups = decode_head_groups(p.group);
  p.tile_keys = decode_tile_keys(s.head_dim, fast);
  const int64_t ctas_per_split = int64_t{s.batch} * s.n_kv_heads * p.head_groups;
  if (policy.splits > 0) {
    p.splits = std::min(policy.splits, kDecodeMaxSplits);
  } else {
    const int slot = decode_occupancy_slot(family, s.head_dim);
    const DecodeSplitOptions o =
        tensor_cores ? decode_split_options_tensor_cores(s.head_dim)
                     : decode_split_options(s.head_dim, fast, traits.ctas_per_sm[slot]);
    p.splits = choose_decode_splits_for_ctas(
        static_cast<int>(std::min<int64_t>(ctas_per_split, 1 << 30)), s.max_length,
        traits.num_sms, o);
  }
  p.kernel = family;
  // Only the tensor-core kernel at head_dim 128 has the wide warp tiles.
  if (tensor_cores && s.head_dim == 128) {
    bool wide = policy.tiles == DecodeTiles::kWide;
    if (policy.tiles == DecodeTiles::kAuto) {
      DecodeMmaTileShape t;
      t.head_dim = s.head_dim;
      t.ctas = int64_t{p.splits} * ctas_per_split;
      t.split_keys = decode_split_keys(s.max_length, p.splits, p.tile_keys);
      t.num_sms = traits.num_sms;
      wide = decode_mma_wide_tiles(t);
    }
    if (wide) p.kernel = DecodeKernel::kTensorCoreWide;
  }
  p.softmax = s.softmax;
  if (p.softmax == SoftmaxPolicy::kUnifiedMax && fast && !has_unified_fast(s.head_dim))
    p.softmax = SoftmaxPolicy::kSynchronized;
  if (tensor_cores)
    p.unified_type = s.dtype == DType::kF16 ? UnifiedType::kF16P : UnifiedType::kBF16P;
  p.workspace_bytes = decode_workspace_layout(s.batch, s.n_heads, s.head_dim, p.splits).bytes;
  return p;
}

Result<size_t> decode_reserve_bytes(const DecodeShape& s, const DecodeDeviceTraits& traits,
                                    const DecodePolicy& policy) {
  size_t need = 0;
  for (const bool aligned : {false, true}) {
    if (aligned && !decode_head_dim_has_fast_kernel(s.head_dim)) continue;
    DecodeShape a = s;
    a.aligned16 = aligned;
    FDPP_ASSIGN_OR_RETURN(const DecodePlan p, plan_decode(a, traits, policy));
    need = std::max(need, p.workspace_bytes);
  }
  return need;
}

DecodeWorkspaceLayout decode_workspace_layout(int batch, int n_heads, int head_dim,
                                              int num_splits) {
  DecodeWorkspaceLayout w;
  if (num_splits <= 1 || batch <= 0 || n_heads <= 0 || head_dim <= 0) return w;
  const size_t rows = static_cast<size_t>(batch) * n_heads * num_splits;
  w.m = 0;
  w.l = align_up(rows * sizeof(float));
  w.acc = 2 * align_up(rows * sizeof(float));
  w.bytes = w.acc + align_up(rows * head_dim * sizeof(float));
  return w;
}

}  // namespace fdpp
