// attention_decode: one query token per sequence against that sequence's cached
// keys, out[b, h] = softmax(scale · K_g q[b, h]) · V_g with g = h's KV head (GQA).
// Also the single-query kernel and the checks that attention_prefill shares.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

void attend_one_query(const float* q /* (D) */, const float* k /* (n_keys, D) */,
                      const float* v /* (n_keys, D) */, int64_t n_keys, int head_dim, float scale,
                      float* out /* (D) */) {
  const int D = head_dim;
  // Two passes recompute the scores instead of storing them (an op allocates
  // nothing). Both passes compute each score identically, so the max key
  // contributes exactly e^0 = 1 and the denominator is >= 1: no 0/0.
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n_keys; ++j) m = std::max(m, scale * dot(q, k + j * D, D));

  double acc[kMaxAttentionHeadDim];  // (D) Σ_j p_j v_j
  std::fill_n(acc, D, 0.0);
  double den = 0.0;  // Σ_j p_j
  for (int64_t j = 0; j < n_keys; ++j) {
    // Subtracting the max keeps e^x <= 1: scores in the hundreds (wide-range
    // models such as OPT) would overflow fp32 exp, and past 709 double exp too.
    const double p = std::exp(scale * dot(q, k + j * D, D) - m);
    den += p;
    const float* vj = v + j * D;  // (D)
    for (int d = 0; d < D; ++d) acc[d] += p * vj[d];
  }
  for (int d = 0; d < D; ++d) out[d] = static_cast<float>(acc[d] / den);
}

Status check_attention(const char* op, const Tensor& q, const Tensor& out, const KVCache* cache,
                       int layer, int64_t* n_heads) {
  FDPP_RETURN_IF_ERROR(check_cache(op, cache, layer));
  const KVCacheLayout& l = cache->layout;
  FDPP_RETURN_IF_ERROR(check_kind(op, "q", q, DType::kF32, 3));
  const int64_t rows = q.size(0), H = q.size(1);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "q", q, DType::kF32, Shape{rows, H, l.head_dim}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "out", out, DType::kF32, Shape{rows, H, l.head_dim}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "q", q));
  if (H < 1 || H % l.n_kv_heads != 0)
    return InvalidArgument(
        fmt::format("{}: q {} has {} heads, not a positive multiple of the "
                    "cache's {} KV heads",
                    op, q.describe(), H, l.n_kv_heads));
  if (l.head_dim > kMaxAttentionHeadDim)
    return Unsupported(fmt::format("{}: head_dim {} above the CPU attention's limit {}", op,
                                   l.head_dim, kMaxAttentionHeadDim));
  *n_heads = H;
  return Status::Ok();
}

Status attention_decode(const AttentionDecodeArgs& args) {
  constexpr const char* op = "attention_decode";
  int64_t n_heads = 0;
  FDPP_RETURN_IF_ERROR(check_attention(op, args.q, args.out, args.cache, args.layer, &n_heads));
  const KVCacheLayout& l = args.cache->layout;
  const int64_t B = args.q.size(0);
  FDPP_RETURN_IF_ERROR(check_tensor(op, "slots", args.slots, DType::kI32, Shape{B}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "lengths", args.lengths, DType::kI32, Shape{B}));

  const int32_t* slot = args.slots.ptr<int32_t>();   // (B)
  const int32_t* len = args.lengths.ptr<int32_t>();  // (B)
  for (int64_t b = 0; b < B; ++b) {
    if (slot[b] < 0 || slot[b] >= l.n_slots)
      return OutOfRange(
          fmt::format("{}: slot {} of sequence {} outside [0, {})", op, slot[b], b, l.n_slots));
    // Zero keys would be a softmax over nothing, which has no value.
    if (len[b] < 1 || len[b] > l.capacity)
      return OutOfRange(fmt::format("{}: length {} of sequence {} outside [1, capacity {}]", op,
                                    len[b], b, l.capacity));
    // The CUDA kernel sizes its KV split grid by max_length and would silently
    // drop the keys past it; the reference refuses, so such a bug shows up here.
    if (len[b] > args.max_length)
      return OutOfRange(fmt::format("{}: length {} of sequence {} exceeds max_length {}", op,
                                    len[b], b, args.max_length));
  }

  const int D = l.head_dim;
  const int64_t group = n_heads / l.n_kv_heads;                       // query heads per KV head
  const float* q = args.q.ptr<float>();                               // (B, n_heads, D)
  float* out = args.out.ptr<float>();                                 // (B, n_heads, D)
  const float* kc = static_cast<const float*>(args.cache->k.data());  // (layers, slots, kv, cap, D)
  const float* vc = static_cast<const float*>(args.cache->v.data());  // (layers, slots, kv, cap, D)
  const int64_t work = B * n_heads * args.max_length * D;  // multiply-adds, about
#pragma omp parallel for collapse(2) schedule(static) if (work >= kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const int g = static_cast<int>(h / group);  // HF repeat_kv: heads [g·group, (g+1)·group)
      const int64_t at = l.offset(args.layer, slot[b], g, 0);
      const int64_t row = (b * n_heads + h) * D;
      attend_one_query(q + row, kc + at, vc + at, len[b], D, args.scale, out + row);
    }
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
