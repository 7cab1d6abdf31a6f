// rope_and_append_kv: rotate q and k of each token by its position (RoPE), write
// the rotated q to q_out and the rotated k and the raw v into the KV cache.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

namespace {

// One head: the first rotary_dim dims are rotated pairwise, the rest pass through.
// Pair i (i < rotary_dim/2) is (i, i + rotary_dim/2) for HF's rotate_half and
// (2i, 2i+1) when interleaved (GLM); both turn by angle = position · inv_freq[i].
// As in HF, the angle is an fp32 product and cos/sin are fp32: at position 4096
// the angle's own rounding (~2.4e-4 rad) dwarfs any later error, so computing it
// in double would make the reference disagree with every fp32 implementation.
void rotate_head(const float* x /* (head_dim) */, float* out /* (head_dim) */, int head_dim,
                 int rotary_dim, bool interleaved, float position,
                 const float* inv_freq /* (rotary_dim/2) */) {
  const int half = rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    const float angle = position * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    const int a = interleaved ? 2 * i : i;
    const int b = interleaved ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b];
    out[a] = x0 * c - x1 * s;
    out[b] = x1 * c + x0 * s;
  }
  for (int d = rotary_dim; d < head_dim; ++d) out[d] = x[d];
}

}  // namespace

Status rope_and_append_kv(const RopeAppendArgs& args) {
  constexpr const char* op = "rope_and_append_kv";
  FDPP_RETURN_IF_ERROR(check_cache(op, args.cache, args.layer));
  const KVCacheLayout& l = args.cache->layout;
  const int D = l.head_dim, n_kv = l.n_kv_heads;

  FDPP_RETURN_IF_ERROR(check_kind(op, "q_out", args.q_out, DType::kF32, 3));
  const int64_t T = args.q_out.size(0), n_heads = args.q_out.size(1);
  if (n_heads < 1)
    return InvalidArgument(fmt::format("{}: q_out {} has no heads", op, args.q_out.describe()));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "q_out", args.q_out, DType::kF32, Shape{T, n_heads, D}));
  const int64_t width = (n_heads + 2 * n_kv) * D;  // q | k | v
  FDPP_RETURN_IF_ERROR(check_tensor(op, "qkv", args.qkv, DType::kF32, Shape{T, width}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "positions", args.positions, DType::kI32, Shape{T}));
  FDPP_RETURN_IF_ERROR(check_tensor(op, "slots", args.slots, DType::kI32, Shape{T}));
  const int rd = args.rotary_dim;
  if (rd < 0 || rd > D || rd % 2 != 0)
    return InvalidArgument(
        fmt::format("{}: rotary_dim {} must be even and in [0, head_dim {}]", op, rd, D));
  if (rd > 0)
    FDPP_RETURN_IF_ERROR(check_tensor(op, "inv_freq", args.inv_freq, DType::kF32, Shape{rd / 2}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "q_out", args.q_out, "qkv", args.qkv));

  const int32_t* pos = args.positions.ptr<int32_t>();  // (T)
  const int32_t* slot = args.slots.ptr<int32_t>();     // (T)
  // All positions and slots are checked before anything is written, so an
  // error leaves q_out and the cache as they were.
  for (int64_t t = 0; t < T; ++t) {
    if (pos[t] < 0 || pos[t] >= l.capacity)
      return OutOfRange(fmt::format("{}: position {} of token {} outside the cache's [0, {})", op,
                                    pos[t], t, l.capacity));
    if (slot[t] < 0 || slot[t] >= l.n_slots)
      return OutOfRange(
          fmt::format("{}: slot {} of token {} outside [0, {})", op, slot[t], t, l.n_slots));
  }

  const float* qkv = args.qkv.ptr<float>();               // (T, (n_heads + 2*n_kv)*D)
  const float* inv_freq = args.inv_freq.ptr<float>();     // (rd/2)
  float* q_out = args.q_out.ptr<float>();                 // (T, n_heads, D)
  float* kc = static_cast<float*>(args.cache->k.data());  // (n_layers, n_slots, n_kv, cap, D)
  float* vc = static_cast<float*>(args.cache->v.data());  // (n_layers, n_slots, n_kv, cap, D)
  // Tokens are independent as long as no two share a (slot, position).
#pragma omp parallel for schedule(static) if (T * width >= kParallelWork)
  for (int64_t t = 0; t < T; ++t) {
    const float p = static_cast<float>(pos[t]);
    const float* q = qkv + t * width;        // (n_heads, D)
    const float* k = q + n_heads * D;        // (n_kv, D)
    const float* v = k + int64_t{n_kv} * D;  // (n_kv, D)
    for (int64_t h = 0; h < n_heads; ++h)
      rotate_head(q + h * D, q_out + (t * n_heads + h) * D, D, rd, args.interleaved, p, inv_freq);
    for (int g = 0; g < n_kv; ++g) {
      const int64_t at = l.offset(args.layer, slot[t], g, pos[t]);
      rotate_head(k + int64_t{g} * D, kc + at, D, rd, args.interleaved, p, inv_freq);
      std::memcpy(vc + at, v + int64_t{g} * D, D * sizeof(float));
    }
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
