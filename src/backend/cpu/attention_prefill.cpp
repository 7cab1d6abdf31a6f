// attention_prefill: T queries of one sequence at positions start_pos..start_pos+T-1,
// causal: query i attends keys 0..start_pos+i of its slot (GQA as in decode).
// The softmax args are ignored (this is the exact specification); the score statistics of
// fdpp calibrate (args.stats) are exact here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "backend/cpu/check.h"
#include "backend/cpu/ops.h"
#include "dispatch/softmax_range.h"

namespace fdpp::cpu {
namespace {

// Every scaled score s = scale·q·k of the call into the histogram, min/max and row maxes.
// Rows in parallel, each thread with its own histogram (merged at the end).
void score_stats(const AttentionPrefillArgs& args, int64_t n_heads, int64_t group) {
  const KVCacheLayout& l = args.cache->layout;
  const int D = l.head_dim;
  const int64_t T = args.q.size(0);
  const float* q = args.q.ptr<float>();                               // (T, n_heads, D)
  const float* kc = static_cast<const float*>(args.cache->k.data());  // (layers, slots, kv, cap, D)
  int32_t* hist = args.stats.histogram.ptr<int32_t>();                // (kScoreBins)
  float* minmax = args.stats.minmax.ptr<float>();                     // (2)
  float* row_max = args.stats.row_max.empty() ? nullptr : args.stats.row_max.ptr<float>();
#pragma omp parallel
  {
    std::vector<int32_t> local(kScoreBins, 0);
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t h = 0; h < n_heads; ++h) {
        const int64_t at = l.offset(args.layer, args.slot, static_cast<int>(h / group), 0);
        const float* qi = q + (i * n_heads + h) * D;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j <= args.start_pos + i; ++j) {
          const float s = static_cast<float>(args.scale * dot(qi, kc + at + j * D, D));
          ++local[score_bin(s)];
          m = std::max(m, s);
          lo = std::min(lo, s);
          hi = std::max(hi, s);
        }
        if (row_max) row_max[i * n_heads + h] = m;
      }
    }
#pragma omp critical
    {
      for (int b = 0; b < kScoreBins; ++b) hist[b] += local[b];
      minmax[0] = std::min(minmax[0], lo);
      minmax[1] = std::max(minmax[1], hi);
    }
  }
}

}  // namespace

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
  const ScoreStatsArgs& st = args.stats;
  if (!st.histogram.empty()) {
    FDPP_RETURN_IF_ERROR(
        check_tensor(op, "stats.histogram", st.histogram, DType::kI32, Shape{kScoreBins}));
    FDPP_RETURN_IF_ERROR(check_tensor(op, "stats.minmax", st.minmax, DType::kF32, Shape{2}));
    if (!st.row_max.empty())
      FDPP_RETURN_IF_ERROR(
          check_tensor(op, "stats.row_max", st.row_max, DType::kF32, Shape{T, n_heads}));
    score_stats(args, n_heads, n_heads / l.n_kv_heads);
  }

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
