// CudaBackend's attention ops: argument checks against the KV cache, the plan
// (dispatch/plan_decode.h) with the traits only the device can measure, the split-KV
// workspace, and the launch of what the plan says.
#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/prefill.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/op_checks.h"

namespace fdpp::cuda {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The unified-softmax pointers of DecodeParams from the op's args (design.md, Technique 1);
// the policy that runs is the plan's.
Status set_decode_softmax(const char* op, const AttentionSoftmaxArgs& sm, int64_t n_slots,
                          int64_t n_heads, DecodeParams* p) {
  if (sm.mode != SoftmaxMode::kUnified) return Status::Ok();
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "softmax.phi", sm.phi, DType::kF32, Shape{n_heads}));
  if (!sm.row_max.empty())
    FDPP_RETURN_IF_ERROR(
        checks::tensor(op, "softmax.row_max", sm.row_max, DType::kF32, Shape{n_slots, n_heads}));
  else if (sm.follow)
    return InvalidArgument(fmt::format("{}: row-following φ needs softmax.row_max", op));
  if (!sm.fallbacks.empty())
    FDPP_RETURN_IF_ERROR(
        checks::tensor(op, "softmax.fallbacks", sm.fallbacks, DType::kI32, Shape{1}));
  p->phi = sm.phi.ptr<float>();
  p->row_max = sm.row_max.empty() ? nullptr : sm.row_max.ptr<float>();
  p->follow = sm.follow ? 1 : 0;
  p->fallbacks = sm.fallbacks.empty() ? nullptr : sm.fallbacks.ptr<unsigned>();
  return Status::Ok();
}

DecodeShape decode_shape(int batch, int n_kv_heads, int group, int head_dim, int max_length,
                         bool aligned16, DType dtype) {
  DecodeShape s;
  s.batch = batch;
  s.n_heads = n_kv_heads * group;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  s.max_length = max_length;
  s.dtype = dtype;
  s.aligned16 = aligned16;
  return s;
}

}  // namespace

Result<DecodeDeviceTraits> CudaBackend::decode_traits(const DecodeShape& shape) {
  decode_traits_.sm_arch = sm_arch();
  decode_traits_.num_sms = props_.multiProcessorCount;
  // A forced split count reads no occupancy.
  if (decode_policy_.splits > 0) return decode_traits_;
  const DecodeKernel family = decode_kernel_family(shape, sm_arch());
  int& slot = decode_traits_.ctas_per_sm[decode_occupancy_slot(family, shape.head_dim)];
  if (slot == 0) {
    FDPP_ASSIGN_OR_RETURN(const int n, decode_ctas_per_sm(family, shape.head_dim, dtype_));
    // 0 would mean the kernel cannot launch at all; the launch reports that.
    slot = std::max(1, n);
  }
  return decode_traits_;
}

Result<DecodePlan> CudaBackend::decode_plan(const DecodeShape& shape) {
  FDPP_ASSIGN_OR_RETURN(const DecodeDeviceTraits traits, decode_traits(shape));
  return plan_decode(shape, traits, decode_policy_);
}

Result<int> CudaBackend::decode_splits(int batch, int n_kv_heads, int group, int head_dim,
                                       int max_length, bool fast_kernel) {
  FDPP_ASSIGN_OR_RETURN(const DecodePlan plan,
                        decode_plan(decode_shape(batch, n_kv_heads, group, head_dim, max_length,
                                                 fast_kernel, dtype_)));
  return plan.splits;
}

bool CudaBackend::decode_wide_tiles(int batch, int n_kv_heads, int group, int head_dim,
                                    int max_length, int splits, bool fast_kernel) const {
  DecodePolicy forced = decode_policy_;
  forced.splits = splits;  // a given split count: the plan reads no occupancy
  DecodeDeviceTraits traits = decode_traits_;
  traits.sm_arch = sm_arch();
  traits.num_sms = props_.multiProcessorCount;
  Result<DecodePlan> plan = plan_decode(
      decode_shape(batch, n_kv_heads, group, head_dim, max_length, fast_kernel, dtype_), traits,
      forced);
  return plan.ok() && plan->kernel == DecodeKernel::kTensorCoreWide;
}

Result<void*> CudaBackend::decode_workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_.data();
  FDPP_ASSIGN_OR_RETURN(const bool cap, capturing());
  if (cap)
    return InvalidArgument(fmt::format(
        "attention_decode needs {} bytes of split-KV workspace (it has {}) while the stream is "
        "capturing a CUDA graph: run this batch size and max_length once before capture, or "
        "call reserve_decode_workspace()",
        bytes, workspace_bytes_));
  // Geometric growth bounds the retired total to the final size.
  const size_t grown = (std::max(bytes, 2 * workspace_bytes_) + kMiB - 1) / kMiB * kMiB;
  FDPP_ASSIGN_OR_RETURN(Buffer b, alloc(grown));
  if (workspace_.data() != nullptr) retired_workspaces_.push_back(std::move(workspace_));
  workspace_ = std::move(b);
  workspace_bytes_ = grown;
  return workspace_.data();
}

Status CudaBackend::reserve_decode_workspace(int batch, int n_heads, int n_kv_heads, int head_dim,
                                             int max_length) {
  FDPP_RETURN_IF_ERROR(activate());
  if (batch < 1 || n_kv_heads < 1 || n_heads < 1 || n_heads % n_kv_heads != 0 || head_dim < 1)
    return InvalidArgument(fmt::format("reserve_decode_workspace: batch {}, heads {} / {} kv, "
                                       "head_dim {}",
                                       batch, n_heads, n_kv_heads, head_dim));
  const DecodeShape shape = decode_shape(batch, n_kv_heads, n_heads / n_kv_heads, head_dim,
                                         max_length, /*aligned16=*/true, dtype_);
  // The kernel choice also depends on pointer alignment: the plan reserves for both, so
  // both kernels' occupancy is measured first.
  DecodeShape unaligned = shape;
  unaligned.aligned16 = false;
  FDPP_RETURN_IF_ERROR(decode_traits(unaligned).status());
  FDPP_ASSIGN_OR_RETURN(const DecodeDeviceTraits traits, decode_traits(shape));
  FDPP_ASSIGN_OR_RETURN(const size_t need, decode_reserve_bytes(shape, traits, decode_policy_));
  return decode_workspace(need).status();
}

Status CudaBackend::attention_decode(const AttentionDecodeArgs& a) {
  constexpr const char* op = "attention_decode";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(check_cache(op, a.cache, a.layer));
  const KVCacheLayout& l = a.cache->layout;
  const int D = l.head_dim;
  FDPP_RETURN_IF_ERROR(checks::rank(op, "q", a.q, 3));
  const int64_t B = a.q.size(0), H = a.q.size(1);
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "q", a.q, dtype_, Shape{B, H, D}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "out", a.out, dtype_, Shape{B, H, D}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", a.out, "q", a.q));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "slots", a.slots, DType::kI32, Shape{B}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "lengths", a.lengths, DType::kI32, Shape{B}));
  if (H < 1 || H % l.n_kv_heads != 0)
    return InvalidArgument(fmt::format("{}: q {} has {} heads, not a positive multiple of the "
                                       "cache's {} KV heads",
                                       op, a.q.describe(), H, l.n_kv_heads));
  if (a.max_length < 1 || a.max_length > l.capacity)
    return OutOfRange(fmt::format("{}: max_length {} outside [1, capacity {}]", op, a.max_length,
                                  l.capacity));
  if (!std::isfinite(a.scale))
    return InvalidArgument(fmt::format("{}: scale {} is not finite", op, a.scale));
  if (B == 0) return Status::Ok();
  if (B > 65535 || H > (1 << 24))
    return OutOfRange(fmt::format("{}: batch {} / {} heads too large", op, B, H));

  const size_t layer_bytes = static_cast<size_t>(l.elements_per_layer()) * 2;
  DecodeParams p;
  p.q = a.q.data;
  p.k = static_cast<const char*>(a.cache->k.data()) + a.layer * layer_bytes;
  p.v = static_cast<const char*>(a.cache->v.data()) + a.layer * layer_bytes;
  p.slots = a.slots.ptr<int32_t>();
  p.lengths = a.lengths.ptr<int32_t>();
  p.out = a.out.data;
  p.batch = static_cast<int>(B);
  p.n_heads = static_cast<int>(H);
  p.n_kv_heads = l.n_kv_heads;
  p.head_dim = D;
  p.n_slots = l.n_slots;
  p.capacity = l.capacity;
  p.max_length = a.max_length;
  p.sm_arch = sm_arch();
  p.scale_log2 = a.scale * 1.4426950408889634f;  // log2(e)
  FDPP_RETURN_IF_ERROR(set_decode_softmax(op, a.softmax, l.n_slots, H, &p));

  DecodeShape shape = decode_shape(p.batch, p.n_kv_heads, p.n_heads / p.n_kv_heads, D,
                                   a.max_length, decode_pointers_aligned16(p), dtype_);
  shape.softmax = a.softmax.mode == SoftmaxMode::kUnified ? SoftmaxPolicy::kUnifiedMax
                                                          : SoftmaxPolicy::kSynchronized;
  FDPP_ASSIGN_OR_RETURN(const DecodePlan plan, decode_plan(shape));
  decode_params_set_plan(plan, &p);
  if (plan.splits > 1) {
    FDPP_ASSIGN_OR_RETURN(void* ws, decode_workspace(plan.workspace_bytes));
    decode_workspace_assign(ws, &p);
  }
  return run_attention_decode(p, plan, dtype_, kernel_stream());
}

Status CudaBackend::attention_prefill(const AttentionPrefillArgs& a) {
  FDPP_RETURN_IF_ERROR(activate());
  if (a.cache != nullptr)
    FDPP_RETURN_IF_ERROR(check_cache("attention_prefill", a.cache, a.layer));
  return run_attention_prefill(a, dtype_, props_.multiProcessorCount, stream_);
}

}  // namespace fdpp::cuda
