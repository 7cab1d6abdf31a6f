// The score statistics side output of prefill attention (fdpp calibrate): every scaled
// score s = scale·q·k of the causal (query, key) pairs of one prefill call goes into a
// histogram (bins of dispatch/softmax_range.h), the call's min and max, and each query
// row's max. A separate pass over the same q and K as the attention kernel: calibration is
// offline, so it is written for clarity (fp32 dot products, one warp per query row).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

struct ScoreStatsParams {
  const void* q = nullptr;  // (T, n_heads, head_dim)
  const void* k = nullptr;  // (n_kv_heads, capacity, head_dim): this layer's, this slot's keys
  int T = 0;
  int n_heads = 0;
  int group = 1;       // n_heads / n_kv_heads
  int capacity = 0;
  int head_dim = 0;
  int start_pos = 0;   // query t sees keys 0 .. start_pos + t
  float scale = 0.f;   // s = scale · q·k
  int* histogram = nullptr;  // (kScoreBins): counts added
  float* minmax = nullptr;   // (2): min and max of s, lowered / raised
  float* row_max = nullptr;  // (T, n_heads): max s of each query row; nullptr: not written
};

// Launches the statistics pass on `stream` (f16 or bf16 q/K; head_dim <= 256, even).
Status run_score_stats(const ScoreStatsParams& p, DType dtype, cudaStream_t stream);

}  // namespace fdpp::cuda
