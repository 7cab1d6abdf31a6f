// attention_prefill: T queries of one sequence at positions start_pos..start_pos+T-1,
// causal: query i attends keys 0..start_pos+i of its slot (GQA as in decode).
#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"

namespace fdpp::cpu {

Status attention_prefill(const AttentionPrefillArgs& args) {
  constexpr const char* op = "attention_prefill";
  int64_t n_heads = 0;
  FDPP_RETURN_IF_ERROR(check_attention(op, args.q, args.out, args.cache, args.layer, &n_heads));
  const KVCacheLayout& l = args.cache->layout;
  const int64_t T = args.q.size(0);
  if (args.slot < 0 || args.slot >= l.n_slots)
    return OutOfRange(fmt::format("{}: slot {} outside [0, {})", op, args.slot, l.n_slots));
  if (args.start_pos < 0 || args.start_pos + T > l.capacity)
    return OutOfRange(fmt::format("{}: positions [{}, {}) outside the cache's [0, {})", op,
                                  args.start_pos, args.start_pos + T, l.capacity));

  const int D = l.head_dim;
  const int64_t group = n_heads / l.n_kv_heads;                       // query heads per KV head
  const float* q = args.q.ptr<float>();                               // (T, n_heads, D)
  float* out = args.out.ptr<float>();                                 // (T, n_heads, D)
  const float* kc = static_cast<const float*>(args.cache->k.data());  // (layers, slots, kv, cap, D)
  const float* vc = static_cast<const float*>(args.cache->v.data());  // (layers, slots, kv, cap, D)
  // Later queries see more keys; dynamic scheduling evens out the triangle.
  const int64_t work = T * n_heads * (args.start_pos + T) * D;  // multiply-adds, about
#pragma omp parallel for collapse(2) schedule(dynamic) if (work >= kParallelWork)
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const int g = static_cast<int>(h / group);
      const int64_t at = l.offset(args.layer, args.slot, g, 0);
      const int64_t row = (i * n_heads + h) * D;
      attend_one_query(q + row, kc + at, vc + at, args.start_pos + i + 1, D, args.scale, out + row);
    }
  }
  return Status::Ok();
}

}  // namespace fdpp::cpu
