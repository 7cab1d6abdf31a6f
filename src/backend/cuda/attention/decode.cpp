// Split-KV decode attention: parameter checks and the closed switch from
// runtime (dtype, head_dim) to the kernel instantiations (house rule 4).
#include "backend/cuda/attention/decode.h"

#include <cstdint>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {
namespace {

constexpr size_t kWorkspaceAlign = 256;
size_t align_up(size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

constexpr SoftmaxPolicy kSync = SoftmaxPolicy::kSynchronized;
constexpr SoftmaxPolicy kUnified = SoftmaxPolicy::kUnifiedMax;

// The unified fast kernel is instantiated for the head dims of the models it is measured on
// (64, 128: Llama, OPT, ChatGLM2); head_dim 256 keeps the synchronized fast kernel (exact
// either way), and the generic kernel has both policies.
bool has_unified_fast(int head_dim) { return head_dim == 64 || head_dim == 128; }

// The tensor-core kernel or the CUDA-core one: split_plan.h says which, and why.
bool uses_mma(const DecodeParams& p, bool fast) {
  return decode_uses_tensor_cores(p.sm_arch, p.head_dim, fast);
}

template <DType kDType>
Status launch_split(const DecodeParams& p, bool fast, KernelStream stream) {
  const bool unified = p.policy == kUnified;
  if (!fast)
    return unified ? launch_decode_generic<kDType, kUnified>(p, stream)
                   : launch_decode_generic<kDType, kSync>(p, stream);
  if (uses_mma(p, fast)) {
    if (p.head_dim == 64)
      return unified ? launch_decode_mma<kDType, 64, kUnified, false>(p, stream)
                     : launch_decode_mma<kDType, 64, kSync, false>(p, stream);
    if (p.wide_tiles)
      return unified ? launch_decode_mma<kDType, 128, kUnified, true>(p, stream)
                     : launch_decode_mma<kDType, 128, kSync, true>(p, stream);
    return unified ? launch_decode_mma<kDType, 128, kUnified, false>(p, stream)
                   : launch_decode_mma<kDType, 128, kSync, false>(p, stream);
  }
  switch (p.head_dim) {
    case 64:
      return unified ? launch_decode_split<kDType, 64, kUnified>(p, stream)
                     : launch_decode_split<kDType, 64, kSync>(p, stream);
    case 128:
      return unified ? launch_decode_split<kDType, 128, kUnified>(p, stream)
                     : launch_decode_split<kDType, 128, kSync>(p, stream);
    case 256: return launch_decode_split<kDType, 256, kSync>(p, stream);
    default: break;
  }
  return Internal(fmt::format("attention_decode: no fast kernel for head_dim {}", p.head_dim));
}

// Occupancy of the synchronized kernels: it sizes the split plan, which must not depend on
// the policy (a graph captured with one plan serves both, and the comparison is fair).
template <DType kDType>
Result<int> occupancy(int head_dim, bool fast, bool tensor_cores) {
  if (!fast) return decode_generic_occupancy<kDType, kSync>();
  if (tensor_cores && (head_dim == 64 || head_dim == 128))
    return head_dim == 64 ? decode_mma_occupancy<kDType, 64, kSync>()
                          : decode_mma_occupancy<kDType, 128, kSync>();
  switch (head_dim) {
    case 64: return decode_split_occupancy<kDType, 64, kSync>();
    case 128: return decode_split_occupancy<kDType, 128, kSync>();
    case 256: return decode_split_occupancy<kDType, 256, kSync>();
    default: break;
  }
  return Internal(fmt::format("attention_decode: no fast kernel for head_dim {}", head_dim));
}

}  // namespace

size_t decode_workspace_bytes(int batch, int n_heads, int head_dim, int num_splits) {
  if (num_splits <= 1 || batch <= 0 || n_heads <= 0 || head_dim <= 0) return 0;
  const size_t rows = static_cast<size_t>(batch) * n_heads * num_splits;
  return 2 * align_up(rows * sizeof(float)) + align_up(rows * head_dim * sizeof(float));
}

void decode_workspace_assign(void* workspace, DecodeParams* p) {
  const size_t rows = static_cast<size_t>(p->batch) * p->n_heads * p->num_splits;
  char* base = static_cast<char*>(workspace);
  p->part_m = reinterpret_cast<float*>(base);                                 // (B, H, S)
  p->part_l = reinterpret_cast<float*>(base + align_up(rows * sizeof(float)));  // (B, H, S)
  p->part_acc =
      reinterpret_cast<float*>(base + 2 * align_up(rows * sizeof(float)));  // (B, H, S, D)
}

bool decode_uses_fast_kernel(const DecodeParams& p) {
  return decode_head_dim_has_fast_kernel(p.head_dim) && aligned(p.q, 16) && aligned(p.k, 16) &&
         aligned(p.v, 16);
}

UnifiedType decode_unified_type(const DecodeParams& p, DType dtype) {
  if (!uses_mma(p, decode_uses_fast_kernel(p))) return UnifiedType::kF32;
  return dtype == DType::kF16 ? UnifiedType::kF16P : UnifiedType::kBF16P;
}

Result<int> decode_ctas_per_sm(int head_dim, bool fast_kernel, bool tensor_cores, DType dtype) {
  switch (dtype) {
    case DType::kF16: return occupancy<DType::kF16>(head_dim, fast_kernel, tensor_cores);
    case DType::kBF16: return occupancy<DType::kBF16>(head_dim, fast_kernel, tensor_cores);
    default: break;
  }
  return Unsupported(fmt::format("attention_decode: dtype {}", dtype_name(dtype)));
}

Status run_attention_decode(const DecodeParams& p, DType dtype, KernelStream stream) {
  constexpr const char* op = "attention_decode";
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return Unsupported(fmt::format("{}: dtype {} (f16 or bf16)", op, dtype_name(dtype)));
  if (p.batch < 0 || p.n_kv_heads < 1 || p.n_heads < 1 || p.group < 1 ||
      p.n_heads != p.group * p.n_kv_heads || p.head_groups != decode_head_groups(p.group))
    return Internal(fmt::format("{}: inconsistent heads (batch {}, heads {}, kv heads {}, "
                                "group {}, head groups {})",
                                op, p.batch, p.n_heads, p.n_kv_heads, p.group, p.head_groups));
  if (p.head_dim < 2 || p.head_dim > kDecodeMaxHeadDim || p.head_dim % 2 != 0)
    return Unsupported(fmt::format("{}: head_dim {} (the kernels take even head_dim <= {})", op,
                                   p.head_dim, kDecodeMaxHeadDim));
  if (p.num_splits < 1 || p.num_splits > kDecodeMaxSplits)
    return Internal(fmt::format("{}: {} splits outside [1, {}]", op, p.num_splits,
                                kDecodeMaxSplits));
  if (p.batch == 0) return Status::Ok();
  // gridDim.y and .z are limited to 65535.
  if (int64_t{p.n_kv_heads} * p.head_groups > 65535 || p.batch > 65535)
    return OutOfRange(fmt::format("{}: batch {} / kv heads {} × head groups {} exceed the grid",
                                  op, p.batch, p.n_kv_heads, p.head_groups));
  if (!p.q || !p.k || !p.v || !p.out || !p.slots || !p.lengths)
    return Internal(fmt::format("{}: null pointer in the parameters", op));
  if (p.num_splits > 1 && (!p.part_m || !p.part_l || !p.part_acc))
    return Internal(fmt::format("{}: {} splits but no workspace", op, p.num_splits));
  // Element pairs are loaded as 32-bit words; outputs are stored per element.
  if (!aligned(p.k, 4) || !aligned(p.v, 4) || !aligned(p.q, 2) || !aligned(p.out, 2))
    return InvalidArgument(fmt::format("{}: misaligned q/k/v/out pointers", op));

  const bool fast = decode_uses_fast_kernel(p);
  DecodeParams q = p;
  q.tile_keys = decode_tile_keys(p.head_dim, fast);  // the combine re-derives the split ranges
  if (q.policy == kUnified && fast && !has_unified_fast(q.head_dim)) q.policy = kSync;
  if (q.policy == kUnified && q.phi == nullptr)
    return Internal(fmt::format("{}: unified softmax without φ", op));
  switch (dtype) {
    case DType::kF16: FDPP_RETURN_IF_ERROR(launch_split<DType::kF16>(q, fast, stream)); break;
    case DType::kBF16: FDPP_RETURN_IF_ERROR(launch_split<DType::kBF16>(q, fast, stream)); break;
    default: break;
  }
  if (q.num_splits > 1) {
    if (q.policy == kUnified)
      FDPP_RETURN_IF_ERROR(
          launch_decode_combine_unified(q, dtype, decode_unified_type(q, dtype), stream));
    else
      FDPP_RETURN_IF_ERROR(launch_decode_combine(q, dtype, stream));
  }
  return Status::Ok();
}

}  // namespace fdpp::cuda
