#include "backend/cuda/bench/attention_bench.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/attention/prefill.h"
#include "dispatch/decode_splits.h"
#include "backend/cuda/bench/event_timer.h"
#include "backend/cuda/bench/fill_random.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {
namespace {

// Device tensors of the softmax state of one layer: φ, row maxes (NaN), one counter.
struct SoftmaxState {
  Buffer buf;
  AttentionSoftmaxArgs args;
};

Result<SoftmaxState> make_softmax_state(CudaBackend& be, const AttentionBenchCase& c,
                                        int n_slots) {
  SoftmaxState s;
  const int64_t H = c.n_heads, S = n_slots;
  FDPP_ASSIGN_OR_RETURN(s.buf, be.alloc((H + S * H + 1) * sizeof(float)));
  float* base = static_cast<float*>(s.buf.data());
  s.args.mode = c.mode;
  s.args.follow = c.follow;
  s.args.phi = Tensor(base, DType::kF32, Device::kCUDA, {H});                  // (n_heads)
  s.args.row_max = Tensor(base + H, DType::kF32, Device::kCUDA, {S, H});       // (slots, heads)
  s.args.fallbacks = Tensor(base + H + S * H, DType::kI32, Device::kCUDA, {1});  // (1)
  std::vector<float> init(static_cast<size_t>(H + S * H), std::numeric_limits<float>::quiet_NaN());
  std::fill(init.begin(), init.begin() + H, c.phi);
  FDPP_RETURN_IF_ERROR(be.copy_from_host(init.data(), Tensor(base, DType::kF32, Device::kCUDA,
                                                             {H + S * H})));
  const int32_t zero = 0;
  FDPP_RETURN_IF_ERROR(be.copy_from_host(&zero, s.args.fallbacks));
  FDPP_RETURN_IF_ERROR(be.synchronize());
  return s;
}

Result<int64_t> read_counter(CudaBackend& be, const Tensor& t) {
  int32_t v = 0;
  FDPP_RETURN_IF_ERROR(be.copy_to_host(t, &v));
  return static_cast<int64_t>(static_cast<uint32_t>(v));
}

Status check_case(const AttentionBenchCase& c) {
  if (c.batch < 1 || c.length < 1 || c.n_heads < 1 || c.n_kv_heads < 1 ||
      c.n_heads % c.n_kv_heads != 0 || c.head_dim < 2 || c.reps < 1 || c.calls < 1)
    return InvalidArgument(fmt::format(
        "bench-attention: batch {}, length {}, heads {}/{}, head_dim {}, reps {}", c.batch,
        c.length, c.n_heads, c.n_kv_heads, c.head_dim, c.reps));
  return Status::Ok();
}

}  // namespace

Result<AttentionBenchResult> bench_decode_attention(CudaBackend& be, const AttentionBenchCase& c) {
  FDPP_RETURN_IF_ERROR(check_case(c));
  const DType dt = be.activation_dtype();
  const int64_t B = c.batch, H = c.n_heads, D = c.head_dim;
  const double layer_kv = 2.0 * B * c.n_kv_heads * static_cast<double>(c.length) * D * 2;
  const double l2 = be.props().l2CacheSize > 0 ? be.props().l2CacheSize : (50 << 20);
  KVCacheLayout l;
  l.n_layers = static_cast<int>(std::clamp(std::ceil(4 * l2 / layer_kv), 1.0, 64.0));
  l.n_slots = c.batch;
  l.n_kv_heads = c.n_kv_heads;
  l.capacity = c.length;
  l.head_dim = c.head_dim;
  FDPP_ASSIGN_OR_RETURN(KVCache cache, be.alloc_kv_cache(l));
  const size_t n_kv = static_cast<size_t>(l.n_layers) * l.elements_per_layer();
  FDPP_RETURN_IF_ERROR(fill_random(cache.k.data(), n_kv, dt, 1.f, 11, be.stream()));
  FDPP_RETURN_IF_ERROR(fill_random(cache.v.data(), n_kv, dt, 1.f, 12, be.stream()));
  FDPP_ASSIGN_OR_RETURN(Buffer qo, be.alloc(2 * B * H * D * dtype_size(dt)));
  const Tensor q(qo.data(), dt, Device::kCUDA, {B, H, D});  // (B, Hq, D)
  const Tensor out(static_cast<char*>(qo.data()) + B * H * D * dtype_size(dt), dt, Device::kCUDA,
                   {B, H, D});  // (B, Hq, D)
  FDPP_RETURN_IF_ERROR(fill_random(q.data, B * H * D, dt, 1.f, 13, be.stream()));
  std::vector<int32_t> host(2 * B);
  for (int b = 0; b < c.batch; ++b) {
    host[b] = b;                   // slot
    host[B + b] = c.length;        // length
  }
  FDPP_ASSIGN_OR_RETURN(Buffer ids, be.alloc(host.size() * sizeof(int32_t)));
  const Tensor slots(ids.data(), DType::kI32, Device::kCUDA, {B});
  const Tensor lengths(static_cast<int32_t*>(ids.data()) + B, DType::kI32, Device::kCUDA, {B});
  FDPP_RETURN_IF_ERROR(be.copy_from_host(host.data(), Tensor(ids.data(), DType::kI32,
                                                             Device::kCUDA, {2 * B})));
  FDPP_ASSIGN_OR_RETURN(SoftmaxState sm, make_softmax_state(be, c, c.batch));

  AttentionDecodeArgs a;
  a.q = q;
  a.cache = &cache;
  a.slots = slots;
  a.lengths = lengths;
  a.max_length = c.length;
  a.scale = 1.f / std::sqrt(static_cast<float>(D));
  a.out = out;
  a.softmax = sm.args;
  for (int layer = 0; layer < l.n_layers; ++layer) {  // eager: workspace and occupancy
    a.layer = layer;
    FDPP_RETURN_IF_ERROR(be.attention_decode(a));
  }
  FDPP_RETURN_IF_ERROR(be.synchronize());
  const int calls = std::max(c.calls, l.n_layers);
  FDPP_RETURN_IF_ERROR(be.begin_capture());
  Status captured = Status::Ok();
  for (int i = 0; i < calls && captured.ok(); ++i) {
    a.layer = i % l.n_layers;
    captured = be.attention_decode(a);
  }
  auto graph = be.end_capture();
  FDPP_RETURN_IF_ERROR(captured);
  if (!graph.ok()) return graph.status();
  for (int i = 0; i < 2; ++i) FDPP_RETURN_IF_ERROR((*graph)->replay());  // warm-up
  FDPP_ASSIGN_OR_RETURN(const TimedRuns t,
                        time_runs(be.stream(), c.reps, calls, [&] { return (*graph)->replay(); }));
  AttentionBenchResult res;
  res.us = t.median_us;
  res.us_min = t.min_us;
  res.bytes = layer_kv;
  res.layers = l.n_layers;
  FDPP_ASSIGN_OR_RETURN(res.splits, be.decode_splits(c.batch, c.n_kv_heads,
                                                     c.n_heads / c.n_kv_heads, c.head_dim,
                                                     c.length, decode_head_dim_has_fast_kernel(
                                                                   c.head_dim)));
  res.wide_tiles = be.decode_wide_tiles(c.batch, c.n_kv_heads, c.n_heads / c.n_kv_heads,
                                        c.head_dim, c.length, res.splits,
                                        decode_head_dim_has_fast_kernel(c.head_dim));
  if (c.mode == SoftmaxMode::kUnified) {
    res.rows = B * H * (l.n_layers + static_cast<int64_t>(calls) * (c.reps + 2));
    FDPP_ASSIGN_OR_RETURN(res.fallbacks, read_counter(be, sm.args.fallbacks));
  }
  return res;
}

Result<AttentionBenchResult> bench_prefill_attention(CudaBackend& be,
                                                     const AttentionBenchCase& c) {
  FDPP_RETURN_IF_ERROR(check_case(c));
  const DType dt = be.activation_dtype();
  const int64_t B = c.batch, L = c.length, H = c.n_heads, D = c.head_dim;
  KVCacheLayout l;
  l.n_layers = 1;
  l.n_slots = c.batch;
  l.n_kv_heads = c.n_kv_heads;
  l.capacity = c.length;
  l.head_dim = c.head_dim;
  FDPP_ASSIGN_OR_RETURN(KVCache cache, be.alloc_kv_cache(l));
  const size_t n_kv = static_cast<size_t>(l.elements_per_layer());
  FDPP_RETURN_IF_ERROR(fill_random(cache.k.data(), n_kv, dt, 1.f, 21, be.stream()));
  FDPP_RETURN_IF_ERROR(fill_random(cache.v.data(), n_kv, dt, 1.f, 22, be.stream()));
  const int64_t n_q = B * L * H * D;
  FDPP_ASSIGN_OR_RETURN(Buffer qo, be.alloc(2 * n_q * dtype_size(dt)));
  const Tensor q(qo.data(), dt, Device::kCUDA, {B * L, H, D});  // (B·L, Hq, D)
  const Tensor out(static_cast<char*>(qo.data()) + n_q * dtype_size(dt), dt, Device::kCUDA,
                   {B * L, H, D});  // (B·L, Hq, D)
  FDPP_RETURN_IF_ERROR(fill_random(q.data, n_q, dt, 1.f, 23, be.stream()));
  FDPP_ASSIGN_OR_RETURN(SoftmaxState sm, make_softmax_state(be, c, c.batch));
  AttentionPrefillArgs a;
  a.q = q;
  a.cache = &cache;
  a.slot = 0;
  a.start_pos = 0;
  a.scale = 1.f / std::sqrt(static_cast<float>(D));
  a.out = out;
  a.softmax = sm.args;
  const int sms = be.props().multiProcessorCount;
  for (int i = 0; i < 3; ++i)
    FDPP_RETURN_IF_ERROR(run_attention_prefill_batched(a, c.batch, dt, sms, be.stream()));
  FDPP_ASSIGN_OR_RETURN(const TimedRuns t, time_runs(be.stream(), c.reps, 1, [&] {
                          return run_attention_prefill_batched(a, c.batch, dt, sms, be.stream());
                        }));
  AttentionBenchResult res;
  res.us = t.median_us;
  res.us_min = t.min_us;
  res.flops = 4.0 * B * static_cast<double>(L) * L * D * H / 2;
  if (c.mode == SoftmaxMode::kUnified) {
    res.rows = B * L * H * (3 + c.reps);
    FDPP_ASSIGN_OR_RETURN(res.fallbacks, read_counter(be, sm.args.fallbacks));
  }
  return res;
}

}  // namespace fdpp::cuda
