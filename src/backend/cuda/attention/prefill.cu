// The prefill attention launcher: checks the op's arguments, asks plan_prefill
// (dispatch/plan_prefill.h) which kernel runs, then a closed switch over (head_dim, dtype,
// softmax policy) reaches the tensor-core instantiation (house rule 4); the generic SIMT
// kernel takes every other even head_dim up to 256 (both policies at run time).
// With args.stats set it also launches the score statistics pass of fdpp calibrate.
#include "backend/cuda/attention/prefill.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cuda/attention/prefill_params.h"
#include "backend/cuda/attention/score_stats.h"
#include "dispatch/plan_prefill.h"
#include "dispatch/softmax_range.h"

namespace fdpp::cuda {
namespace {

// Messages are built with std::string rather than fmt: nvcc in C++20 mode cannot compile fmt 9.
std::string str(int64_t v) { return std::to_string(v); }

Status check_tensor(const char* name, const Tensor& t, DType dtype, const Shape& shape) {
  if (t.data == nullptr)
    return InvalidArgument(std::string("attention_prefill: ") + name + " has no data");
  if (t.device != Device::kCUDA)
    return InvalidArgument(std::string("attention_prefill: ") + name + " " + t.describe() +
                           " is not on the GPU");
  if (t.dtype != dtype || t.shape != shape)
    return InvalidArgument(std::string("attention_prefill: ") + name + " is " + t.describe() +
                           ", expected " + dtype_name(dtype) + shape.to_string());
  return Status::Ok();
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// An optional tensor: empty, or exactly (dtype, shape) on the GPU.
Status check_optional(const char* name, const Tensor& t, DType dtype, const Shape& shape) {
  return t.empty() ? Status::Ok() : check_tensor(name, t, dtype, shape);
}

template <SoftmaxPolicy kPolicy>
Status launch_mma(const PrefillParams& p, DType dtype, int head_dim, cudaStream_t stream) {
  const bool f16 = dtype == DType::kF16;
  switch (head_dim) {
    case 64:
      return f16 ? launch_prefill_mma<DType::kF16, 64, kPolicy>(p, stream)
                 : launch_prefill_mma<DType::kBF16, 64, kPolicy>(p, stream);
    case 128:
      return f16 ? launch_prefill_mma<DType::kF16, 128, kPolicy>(p, stream)
                 : launch_prefill_mma<DType::kBF16, 128, kPolicy>(p, stream);
    default: break;
  }
  return Internal("attention_prefill: no tensor-core kernel for head_dim " + str(head_dim));
}

}  // namespace

Status run_attention_prefill(const AttentionPrefillArgs& args, DType dtype, int num_sms,
                             cudaStream_t stream) {
  return run_attention_prefill_batched(args, 1, dtype, num_sms, stream);
}

Status run_attention_prefill_batched(const AttentionPrefillArgs& args, int batch, DType dtype,
                                     int num_sms, cudaStream_t stream) {
  // num_sms is not needed yet: the grid is (n_heads, ceil(T / 128)) whatever the GPU. It is
  // the input for a smaller Q tile (or a KV split) when that grid is under one wave.
  (void)num_sms;
  if (batch < 1 || batch > 65535)
    return InvalidArgument("attention_prefill: batch " + str(batch) + " outside [1, 65535]");
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return Unsupported(std::string("attention_prefill: dtype ") + dtype_name(dtype) +
                       " (the CUDA kernels take f16 or bf16)");
  const KVCache* cache = args.cache;
  if (cache == nullptr) return InvalidArgument("attention_prefill: no KV cache");
  const KVCacheLayout& l = cache->layout;
  if (cache->dtype != dtype)
    return InvalidArgument(std::string("attention_prefill: KV cache is ") +
                           dtype_name(cache->dtype) + ", activations are " + dtype_name(dtype));
  if (args.layer < 0 || args.layer >= l.n_layers)
    return OutOfRange("attention_prefill: layer " + str(args.layer) + " outside [0, " +
                      str(l.n_layers) + ")");
  if (args.slot < 0 || args.slot + batch > l.n_slots)
    return OutOfRange("attention_prefill: slots [" + str(args.slot) + ", " +
                      str(args.slot + batch) + ") outside [0, " + str(l.n_slots) + ")");
  if (args.q.rank() != 3 || args.q.size(0) % batch != 0)
    return InvalidArgument("attention_prefill: q " + args.q.describe() +
                           " is not (batch·T, n_heads, head_dim)");
  const int64_t T = args.q.size(0) / batch;
  const int64_t n_heads = args.q.size(1);
  const int head_dim = l.head_dim;
  FDPP_RETURN_IF_ERROR(check_tensor("q", args.q, dtype, Shape{batch * T, n_heads, head_dim}));
  FDPP_RETURN_IF_ERROR(check_tensor("out", args.out, dtype, Shape{batch * T, n_heads, head_dim}));
  const AttentionSoftmaxArgs& sm = args.softmax;
  const bool unified = sm.mode == SoftmaxMode::kUnified;
  if (unified)
    FDPP_RETURN_IF_ERROR(check_tensor("softmax.phi", sm.phi, DType::kF32, Shape{n_heads}));
  FDPP_RETURN_IF_ERROR(
      check_optional("softmax.row_max", sm.row_max, DType::kF32, Shape{l.n_slots, n_heads}));
  FDPP_RETURN_IF_ERROR(check_optional("softmax.fallbacks", sm.fallbacks, DType::kI32, Shape{1}));
  const ScoreStatsArgs& st = args.stats;
  const bool stats = !st.histogram.empty();
  if (stats) {
    if (batch != 1) return InvalidArgument("attention_prefill: score statistics need batch 1");
    FDPP_RETURN_IF_ERROR(check_tensor("stats.histogram", st.histogram, DType::kI32,
                                      Shape{kScoreBins}));
    FDPP_RETURN_IF_ERROR(check_tensor("stats.minmax", st.minmax, DType::kF32, Shape{2}));
    FDPP_RETURN_IF_ERROR(
        check_optional("stats.row_max", st.row_max, DType::kF32, Shape{T, n_heads}));
  }
  PrefillShape shape;
  shape.n_heads = n_heads;
  shape.n_kv_heads = l.n_kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  shape.softmax = unified ? SoftmaxPolicy::kUnifiedMax : SoftmaxPolicy::kSynchronized;
  // Heads, head_dim and the head count's grid limit: what no kernel takes.
  FDPP_RETURN_IF_ERROR(check_prefill_shape(shape));
  if (args.start_pos < 0 || args.start_pos + T > l.capacity)
    return OutOfRange("attention_prefill: positions [" + str(args.start_pos) + ", " +
                      str(args.start_pos + T) + ") outside the cache's [0, " + str(l.capacity) +
                      ")");
  if (!(args.scale > 0.f) || !std::isfinite(args.scale))
    return InvalidArgument("attention_prefill: scale must be positive and finite (the kernel "
                           "takes the row max of unscaled scores)");
  {
    // Every CTA reads its q rows into shared memory before writing out, but other CTAs do
    // not order against it; an aliased out would race with their reads.
    const auto* qb = static_cast<const char*>(args.q.data);
    const auto* ob = static_cast<const char*>(args.out.data);
    if (qb < ob + args.out.nbytes() && ob < qb + args.q.nbytes())
      return InvalidArgument("attention_prefill: out overlaps q");
  }
  if (T == 0) return Status::Ok();

  const Tensor k_layer = cache->k_layer(args.layer);  // (n_slots, n_kv_heads, capacity, head_dim)
  const Tensor v_layer = cache->v_layer(args.layer);  // (n_slots, n_kv_heads, capacity, head_dim)
  if (k_layer.empty() || v_layer.empty())
    return InvalidArgument("attention_prefill: KV cache has no memory");
  if (k_layer.device != Device::kCUDA || v_layer.device != Device::kCUDA)
    return InvalidArgument("attention_prefill: KV cache is not on the GPU");
  const int64_t slot_off = l.offset(0, args.slot, 0, 0) * static_cast<int64_t>(dtype_size(dtype));

  PrefillParams p;
  p.q = args.q.data;
  p.k = static_cast<const char*>(k_layer.data) + slot_off;  // (n_kv_heads, capacity, head_dim)
  p.v = static_cast<const char*>(v_layer.data) + slot_off;  // (n_kv_heads, capacity, head_dim)
  p.out = args.out.data;
  // cp.async moves 16-byte chunks; a view offset that breaks that alignment (possible only
  // through a hand-made Tensor) takes the generic kernel rather than faulting.
  shape.aligned16 = aligned(p.q, 16) && aligned(p.out, 16) && aligned(p.k, 16) &&
                    aligned(p.v, 16);
  FDPP_ASSIGN_OR_RETURN(const PrefillPlan plan, plan_prefill(shape));
  p.T = static_cast<int>(T);
  p.n_heads = static_cast<int>(n_heads);
  p.group = plan.group;
  p.capacity = l.capacity;
  p.start_pos = args.start_pos;
  p.scale_log2 = args.scale * kLog2e;
  p.batch = batch;
  p.q_batch_stride = T * n_heads * head_dim;
  p.kv_batch_stride = static_cast<int64_t>(l.n_kv_heads) * l.capacity * head_dim;  // a slot
  p.policy = plan.softmax;
  p.phi = unified ? sm.phi.ptr<float>() : nullptr;
  p.fallbacks = sm.fallbacks.empty() ? nullptr : sm.fallbacks.ptr<unsigned>();
  // (n_slots, n_heads) → this slot's row; one sequence only (a batch would race on it).
  p.last_row_max = sm.row_max.empty() || batch != 1
                       ? nullptr
                       : sm.row_max.ptr<float>() + static_cast<int64_t>(args.slot) * n_heads;

  if (stats) {
    ScoreStatsParams sp;
    sp.q = p.q;
    sp.k = p.k;
    sp.T = p.T;
    sp.n_heads = p.n_heads;
    sp.group = p.group;
    sp.capacity = p.capacity;
    sp.head_dim = head_dim;
    sp.start_pos = p.start_pos;
    sp.scale = args.scale;
    sp.histogram = st.histogram.ptr<int>();
    sp.minmax = st.minmax.ptr<float>();
    sp.row_max = st.row_max.empty() ? nullptr : st.row_max.ptr<float>();
    FDPP_RETURN_IF_ERROR(run_score_stats(sp, dtype, stream));
  }

  if (plan.kernel == PrefillKernel::kTensorCore)
    return plan.softmax == SoftmaxPolicy::kUnifiedMax
               ? launch_mma<SoftmaxPolicy::kUnifiedMax>(p, dtype, head_dim, stream)
               : launch_mma<SoftmaxPolicy::kSynchronized>(p, dtype, head_dim, stream);
  if (!aligned(p.q, 4) || !aligned(p.out, 4) || !aligned(p.k, 4) || !aligned(p.v, 4))
    return InvalidArgument("attention_prefill: q, out and the KV cache must be 4-byte aligned");
  return launch_prefill_generic(p, dtype, head_dim, stream);
}

}  // namespace fdpp::cuda
