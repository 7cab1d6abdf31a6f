// Split-KV decode attention: parameter checks and the closed switch from the plan's kernel
// and the runtime (dtype, head_dim) to the kernel instantiations (house rule 4). What runs is
// dispatch/plan_decode.h's decision; nothing here chooses.
#include "backend/cuda/attention/decode.h"

#include <cstdint>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {
namespace {

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

constexpr SoftmaxPolicy kSync = SoftmaxPolicy::kSynchronized;
constexpr SoftmaxPolicy kUnified = SoftmaxPolicy::kUnifiedMax;

template <DType kDType>
Status launch_split(const DecodeParams& p, DecodeKernel kernel, KernelStream stream) {
  const bool unified = p.policy == kUnified;
  switch (kernel) {
    case DecodeKernel::kGeneric:
      return unified ? launch_decode_generic<kDType, kUnified>(p, stream)
                     : launch_decode_generic<kDType, kSync>(p, stream);
    case DecodeKernel::kTensorCore:
      if (p.head_dim == 64)
        return unified ? launch_decode_mma<kDType, 64, kUnified, false>(p, stream)
                       : launch_decode_mma<kDType, 64, kSync, false>(p, stream);
      if (p.head_dim == 128)
        return unified ? launch_decode_mma<kDType, 128, kUnified, false>(p, stream)
                       : launch_decode_mma<kDType, 128, kSync, false>(p, stream);
      break;
    case DecodeKernel::kTensorCoreWide:
      if (p.head_dim == 128)
        return unified ? launch_decode_mma<kDType, 128, kUnified, true>(p, stream)
                       : launch_decode_mma<kDType, 128, kSync, true>(p, stream);
      break;
    case DecodeKernel::kCudaCore:
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
      break;
  }
  return Internal(fmt::format("attention_decode: no {} kernel for head_dim {}",
                              decode_kernel_name(kernel), p.head_dim));
}

// Occupancy of the synchronized kernels: it sizes the split plan, which must not depend on
// the policy (a graph captured with one plan serves both, and the comparison is fair).
template <DType kDType>
Result<int> occupancy(DecodeKernel family, int head_dim) {
  if (family == DecodeKernel::kGeneric) return decode_generic_occupancy<kDType, kSync>();
  if (family != DecodeKernel::kCudaCore && (head_dim == 64 || head_dim == 128))
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

bool decode_pointers_aligned16(const DecodeParams& p) {
  return aligned(p.q, 16) && aligned(p.k, 16) && aligned(p.v, 16);
}

void decode_params_set_plan(const DecodePlan& plan, DecodeParams* p) {
  p->group = plan.group;
  p->head_groups = plan.head_groups;
  p->num_splits = plan.splits;
  p->tile_keys = plan.tile_keys;  // the combine re-derives the split ranges from it
  p->wide_tiles = plan.kernel == DecodeKernel::kTensorCoreWide;
  p->policy = plan.softmax;
}

void decode_workspace_assign(void* workspace, DecodeParams* p) {
  const DecodeWorkspaceLayout w =
      decode_workspace_layout(p->batch, p->n_heads, p->head_dim, p->num_splits);
  char* base = static_cast<char*>(workspace);
  p->part_m = reinterpret_cast<float*>(base + w.m);      // (B, H, S)
  p->part_l = reinterpret_cast<float*>(base + w.l);      // (B, H, S)
  p->part_acc = reinterpret_cast<float*>(base + w.acc);  // (B, H, S, D)
}

Result<int> decode_ctas_per_sm(DecodeKernel family, int head_dim, DType dtype) {
  switch (dtype) {
    case DType::kF16: return occupancy<DType::kF16>(family, head_dim);
    case DType::kBF16: return occupancy<DType::kBF16>(family, head_dim);
    default: break;
  }
  return Unsupported(fmt::format("attention_decode: dtype {}", dtype_name(dtype)));
}

Status run_attention_decode(const DecodeParams& p, const DecodePlan& plan, DType dtype,
                            KernelStream stream) {
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
  if (p.num_splits != plan.splits || p.tile_keys != plan.tile_keys || p.policy != plan.softmax ||
      p.group != plan.group || p.wide_tiles != (plan.kernel == DecodeKernel::kTensorCoreWide))
    return Internal(fmt::format("{}: parameters disagree with the plan", op));
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
  // The fast kernels' 16-byte loads: a plan made for other pointers would fault.
  if (plan.kernel != DecodeKernel::kGeneric && !decode_pointers_aligned16(p))
    return Internal(fmt::format("{}: a {} plan for pointers that are not 16-byte aligned", op,
                                decode_kernel_name(plan.kernel)));
  if (p.policy == kUnified && p.phi == nullptr)
    return Internal(fmt::format("{}: unified softmax without φ", op));
  switch (dtype) {
    case DType::kF16:
      FDPP_RETURN_IF_ERROR(launch_split<DType::kF16>(p, plan.kernel, stream));
      break;
    case DType::kBF16:
      FDPP_RETURN_IF_ERROR(launch_split<DType::kBF16>(p, plan.kernel, stream));
      break;
    default: break;
  }
  if (p.num_splits > 1) {
    if (p.policy == kUnified)
      FDPP_RETURN_IF_ERROR(launch_decode_combine_unified(p, dtype, plan.unified_type, stream));
    else
      FDPP_RETURN_IF_ERROR(launch_decode_combine(p, dtype, stream));
  }
  return Status::Ok();
}

}  // namespace fdpp::cuda
