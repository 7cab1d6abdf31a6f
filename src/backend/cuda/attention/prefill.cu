// The prefill attention launcher: checks the op's arguments, then a closed switch over
// (head_dim, dtype) picks the tensor-core instantiation (house rule 4); any other even head_dim
// up to 256 takes the generic SIMT kernel.
#include "backend/cuda/attention/prefill.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cuda/attention/prefill_params.h"

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

}  // namespace

Status run_attention_prefill(const AttentionPrefillArgs& args, DType dtype, int num_sms,
                             cudaStream_t stream) {
  // num_sms is not needed yet: the grid is (n_heads, ceil(T / 128)) whatever the GPU. It is
  // the input for a smaller Q tile (or a KV split) when that grid is under one wave.
  (void)num_sms;
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
  if (args.slot < 0 || args.slot >= l.n_slots)
    return OutOfRange("attention_prefill: slot " + str(args.slot) + " outside [0, " +
                      str(l.n_slots) + ")");
  if (args.q.rank() != 3)
    return InvalidArgument("attention_prefill: q " + args.q.describe() +
                           " is not (T, n_heads, head_dim)");
  const int64_t T = args.q.size(0);
  const int64_t n_heads = args.q.size(1);
  const int head_dim = l.head_dim;
  FDPP_RETURN_IF_ERROR(check_tensor("q", args.q, dtype, Shape{T, n_heads, head_dim}));
  FDPP_RETURN_IF_ERROR(check_tensor("out", args.out, dtype, Shape{T, n_heads, head_dim}));
  if (n_heads < 1 || l.n_kv_heads < 1 || n_heads % l.n_kv_heads != 0)
    return InvalidArgument("attention_prefill: q has " + str(n_heads) +
                           " heads, not a positive multiple of the cache's " +
                           str(l.n_kv_heads) + " KV heads");
  if (args.start_pos < 0 || args.start_pos + T > l.capacity)
    return OutOfRange("attention_prefill: positions [" + str(args.start_pos) + ", " +
                      str(args.start_pos + T) + ") outside the cache's [0, " + str(l.capacity) +
                      ")");
  if (!(args.scale > 0.f) || !std::isfinite(args.scale))
    return InvalidArgument("attention_prefill: scale must be positive and finite (the kernel "
                           "takes the row max of unscaled scores)");
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > 256)
    return Unsupported("attention_prefill: head_dim " + str(head_dim) +
                       " (the CUDA kernels take even head_dim <= 256)");
  if (n_heads > 65535)
    return Unsupported("attention_prefill: more than 65535 heads");
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
  p.T = static_cast<int>(T);
  p.n_heads = static_cast<int>(n_heads);
  p.group = static_cast<int>(n_heads / l.n_kv_heads);
  p.capacity = l.capacity;
  p.start_pos = args.start_pos;
  p.scale_log2 = args.scale * 1.4426950408889634f;  // log2(e)

  // cp.async moves 16-byte chunks; a view offset that breaks that alignment (possible only
  // through a hand-made Tensor) takes the generic kernel rather than faulting.
  const bool mma_ok = aligned(p.q, 16) && aligned(p.out, 16) && aligned(p.k, 16) &&
                      aligned(p.v, 16);
  if (mma_ok) {
    switch (head_dim) {
      case 64:
        return dtype == DType::kF16 ? launch_prefill_mma<DType::kF16, 64>(p, stream)
                                    : launch_prefill_mma<DType::kBF16, 64>(p, stream);
      case 128:
        return dtype == DType::kF16 ? launch_prefill_mma<DType::kF16, 128>(p, stream)
                                    : launch_prefill_mma<DType::kBF16, 128>(p, stream);
      default: break;  // no tensor-core instantiation: generic below
    }
  }
  if (!aligned(p.q, 4) || !aligned(p.out, 4) || !aligned(p.k, 4) || !aligned(p.v, 4))
    return InvalidArgument("attention_prefill: q, out and the KV cache must be 4-byte aligned");
  return launch_prefill_generic(p, dtype, head_dim, stream);
}

}  // namespace fdpp::cuda
