// The unified-max softmax state a Model keeps for its attention layers (design.md,
// Technique 1): which softmax prefill and decode use, φ per (layer, query head), the last
// row max of every (layer, slot, head) for row-following φ, the per-layer fallback
// counters, and the score-statistics buffers of fdpp calibrate. All device memory is
// allocated with the model, so every attention call (and a captured decode graph) points
// at fixed buffers; counters are read on demand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "fdpp/status.h"

namespace fdpp {

struct SoftmaxSettings {
  SoftmaxMode prefill = SoftmaxMode::kSynchronized;
  SoftmaxMode decode = SoftmaxMode::kSynchronized;
  bool follow = false;     // decode φ of (sequence, head): its previous row max
  std::vector<float> phi;  // (n_layers, n_heads), s units; empty: 0 everywhere
  std::string phi_source;  // for reports: "calibration <file>" or "default 0"
};

// Since the last reset. Rows are per layer (every layer attends the same rows).
struct SoftmaxCounters {
  int64_t prefill_rows = 0;  // (query token, head) rows that ran the unified prefill
  int64_t decode_rows = 0;   // (sequence, head) rows that ran the unified decode
  std::vector<int64_t> prefill_fallbacks;  // (n_layers): rows recomputed
  std::vector<int64_t> decode_fallbacks;   // (n_layers)
};

// What the prefill calls since the last take_score_stats() saw (fdpp calibrate).
struct ScoreStatsSnapshot {
  int tokens = 0;                  // T of the last call
  std::vector<int32_t> histogram;  // (n_layers, kScoreBins)
  std::vector<float> minmax;       // (n_layers, 2)
  std::vector<float> row_max;      // (n_layers, tokens, n_heads): of the last call
};

class ModelSoftmax {
 public:
  Status allocate(Backend& backend, int n_layers, int n_heads, int n_slots, int max_tokens);
  // Sets the modes and uploads φ (stream-ordered; before any capture). φ must be finite.
  Status configure(const SoftmaxSettings& settings);
  const SoftmaxSettings& settings() const { return settings_; }

  // The args of layer `layer`'s attention call.
  AttentionSoftmaxArgs args(int layer, bool decode) const;
  // Host-side row counts (a replayed graph runs no host code: the engine calls this per step).
  void count_rows(bool decode, int64_t rows);
  Result<SoftmaxCounters> counters();  // waits for the device
  Status reset_counters();

  // Score statistics: off until enabled (the buffers are allocated then, outside a capture).
  Status enable_score_stats();
  bool score_stats_enabled() const { return !hist_.empty(); }
  ScoreStatsArgs stats_args(int layer, int tokens) const;
  // Downloads what the prefill calls since the last take added, and clears it.
  Result<ScoreStatsSnapshot> take_score_stats(int tokens);

 private:
  Status clear_stats();

  Backend* backend_ = nullptr;
  int n_layers_ = 0, n_heads_ = 0, n_slots_ = 0, max_tokens_ = 0;
  SoftmaxSettings settings_;
  Buffer state_;
  Tensor phi_;        // f32 (n_layers, n_heads)
  Tensor row_max_;    // f32 (n_layers, n_slots, n_heads); NaN: no row yet (calibrated φ)
  Tensor fallbacks_;  // i32 (2, n_layers): prefill, decode
  int64_t prefill_rows_ = 0, decode_rows_ = 0;
  Buffer stats_;
  Tensor hist_;       // i32 (n_layers, kScoreBins)
  Tensor minmax_;     // f32 (n_layers, 2)
  Tensor stat_rows_;  // f32 (n_layers, max_tokens, n_heads)
};

}  // namespace fdpp
