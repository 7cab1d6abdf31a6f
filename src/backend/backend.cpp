#include "backend/backend.h"

#include <cassert>
#include <limits>

#include <fmt/format.h>

#include "backend/gemm_timing.h"
#include "dispatch/gemm_table.h"

namespace fdpp {

namespace {

// (n_slots, n_kv_heads, capacity, head_dim) view of one layer of a (n_layers, ...) buffer.
// Tensor-returning accessors cannot report a Status, so a bad layer asserts in debug
// builds and yields an empty view (data == nullptr) in release builds.
Tensor layer_view(const Buffer& b, const KVCacheLayout& l, DType dtype, int layer) {
  assert(layer >= 0 && layer < l.n_layers);
  if (layer < 0 || layer >= l.n_layers || b.data() == nullptr) return {};
  char* base = static_cast<char*>(b.data()) + static_cast<size_t>(layer) *
                                                  static_cast<size_t>(l.elements_per_layer()) *
                                                  dtype_size(dtype);
  return {base, dtype, b.device(), Shape{l.n_slots, l.n_kv_heads, l.capacity, l.head_dim}};
}

}  // namespace

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kRelu: return "relu";
    case Activation::kGelu: return "gelu";
  }
  return "?";
}

Tensor KVCache::k_layer(int layer) const { return layer_view(k, layout, dtype, layer); }
Tensor KVCache::v_layer(int layer) const { return layer_view(v, layout, dtype, layer); }

Result<KVCache> Backend::alloc_kv_cache(const KVCacheLayout& layout) {
  const KVCacheLayout& l = layout;
  if (l.n_layers <= 0 || l.n_slots <= 0 || l.n_kv_heads <= 0 || l.capacity <= 0 || l.head_dim <= 0)
    return InvalidArgument(fmt::format(
        "KV cache layout needs positive sizes (layers {}, slots {}, kv heads {}, capacity {}, "
        "head_dim {})",
        l.n_layers, l.n_slots, l.n_kv_heads, l.capacity, l.head_dim));
  const DType dtype = activation_dtype();
  // Bytes per buffer, with every partial product checked: the element offsets of
  // KVCacheLayout are int64, so the whole cache must stay below 2^63 elements too.
  uint64_t bytes = dtype_size(dtype);
  for (int64_t f : {int64_t{l.n_layers}, int64_t{l.n_slots}, int64_t{l.n_kv_heads},
                    int64_t{l.capacity}, int64_t{l.head_dim}}) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(f), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        bytes > std::numeric_limits<size_t>::max())
      return OutOfRange(fmt::format(
          "KV cache of {} layers x {} slots x {} kv heads x {} positions x {} dims ({}) "
          "overflows a 64-bit size",
          l.n_layers, l.n_slots, l.n_kv_heads, l.capacity, l.head_dim, dtype_name(dtype)));
  }
  KVCache cache;
  cache.layout = layout;
  cache.dtype = dtype;
  // Not zero-filled: attention reads only positions < length, which
  // rope_and_append_kv has written.
  FDPP_ASSIGN_OR_RETURN(cache.k, alloc(static_cast<size_t>(bytes)));
  FDPP_ASSIGN_OR_RETURN(cache.v, alloc(static_cast<size_t>(bytes)));
  return cache;
}

Status Backend::fused_linear(const Tensor& x, const LinearPrologue& pro, const Tensor& w,
                             const Tensor& y, const LinearEpilogue& ep) {
  if (pro.kind == LinearPrologue::Kind::kNone) return linear(x, w, y, ep);
  FDPP_RETURN_IF_ERROR(apply_prologue(x, pro));
  return linear(pro.scratch, w, y, ep);
}

Status Backend::apply_prologue(const Tensor& x, const LinearPrologue& pro) {
  switch (pro.kind) {
    case LinearPrologue::Kind::kNone: return Status::Ok();
    case LinearPrologue::Kind::kRmsNorm: return rmsnorm(x, pro.norm_weight, pro.eps, pro.scratch);
    case LinearPrologue::Kind::kSiluMul: return silu_mul(x, pro.scratch);
  }
  return InvalidArgument("fused_linear: unknown prologue");
}

Status Backend::set_gemm_table(std::shared_ptr<const TunedGemmTable> table) {
  return Unsupported(
      fmt::format("a GEMM table needs the CUDA backend, not {}", device_name(device())));
}

Result<GpuIdentity> Backend::gpu_identity() const {
  return Unsupported(fmt::format("the {} backend has no GPU identity", device_name(device())));
}

Result<std::vector<GemmTiming>> Backend::time_gemms(const GemmTimingRequest& request,
                                                    const GemmTimingProgress& progress) {
  return Unsupported(
      fmt::format("GEMM timing needs the CUDA backend, not {}", device_name(device())));
}

}  // namespace fdpp
