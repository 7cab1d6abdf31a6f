// fdpp calibrate's data: the scaled scores s = q·k/√d of every attention layer while text
// runs through the model (prefill, synchronized softmax, with the backend's score
// statistics side output). Row maxes are kept whole, per sequence, because the φ fit and the
// row-following simulation need each row (tuning/score_analysis.h); scores only as a
// histogram.
#pragma once

#include <cstdint>
#include <vector>

#include "fdpp/status.h"
#include "model/model.h"
#include "tuning/calibration.h"

namespace fdpp {

struct LayerScoreStats {
  std::vector<uint64_t> histogram;  // (kScoreBins) counts of s
  double min = 0, max = 0;          // exact extremes of s (+inf / -inf before any score)
  // Per sequence, the row max of every (position, query head): (len, n_heads) row-major.
  std::vector<std::vector<float>> sequences;
};

struct ScoreStatistics {
  int n_heads = 0;
  int n_kv_heads = 0;
  int64_t tokens = 0;
  std::vector<LayerScoreStats> layers;
};

// Feeds `ids` (one sequence of at most the model's context) through the model as prefill
// chunks in KV slot 0 and adds the scores of every layer to *stats (initialised on first use).
Status collect_score_statistics(Model& model, const std::vector<int>& ids,
                                ScoreStatistics* stats);

// The calibration of these statistics: per layer the range covering `coverage` of the
// scores (the paper's Figure 5), φ fitted to the row maxes for the narrowest safe range
// (fp16 P, tuning/score_analysis.h) per layer and per KV head, and the fallback rates each
// φ source would have had on these rows:
//   prefill_fp16p (layer φ), prefill_fp16p_kv_head (KV-head φ), prefill_bf16p,
//   decode_calibrated / decode_follow (fp32 range, the decode kernels'), and the same two
//   under the fp16-P range ("..._fp16p_range"), which tells the φ sources apart where the
//   fp32 range is too wide to. Granularity kv_head when it halves the prefill fallbacks.
Calibration build_calibration(const ScoreStatistics& stats, double coverage);

// The share of all layers' scores in [lo, hi] = the coverage quantiles of the merged
// histogram (the model-wide range, as the paper reports it).
struct ScoreRange {
  double min = 0, lo = 0, hi = 0, max = 0;
};
ScoreRange model_score_range(const ScoreStatistics& stats, double coverage);

}  // namespace fdpp
