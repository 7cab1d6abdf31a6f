#include "tuning/score_statistics.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "dispatch/softmax_range.h"
#include "tuning/score_analysis.h"

namespace fdpp {

Status collect_score_statistics(Model& model, const std::vector<int>& ids,
                                ScoreStatistics* stats) {
  const ModelConfig& cfg = model.config();
  const ModelLimits& lim = model.limits();
  const int n = static_cast<int>(ids.size());
  if (n < 1 || n > lim.context)
    return OutOfRange(fmt::format("calibration sequence of {} tokens (the context holds {})", n,
                                  lim.context));
  for (int id : ids)
    if (id < 0 || id >= cfg.vocab_size)
      return OutOfRange(fmt::format("token id {} outside the vocabulary [0, {})", id,
                                    cfg.vocab_size));
  ModelSoftmax& sm = model.softmax();
  FDPP_RETURN_IF_ERROR(sm.enable_score_stats());
  if (stats->layers.empty()) {
    stats->n_heads = cfg.num_heads;
    stats->n_kv_heads = cfg.num_kv_heads;
    stats->layers.resize(cfg.num_layers);
    for (LayerScoreStats& L : stats->layers) {
      L.histogram.assign(kScoreBins, 0);
      L.min = std::numeric_limits<double>::infinity();
      L.max = -L.min;
    }
  }
  for (LayerScoreStats& L : stats->layers) L.sequences.emplace_back();

  const int H = cfg.num_heads;
  for (int start = 0; start < n; start += lim.max_tokens) {
    const int len = std::min(lim.max_tokens, n - start);
    FDPP_RETURN_IF_ERROR(model.prefill_chunk(ids.data() + start, len, /*slot=*/0, start));
    FDPP_ASSIGN_OR_RETURN(ScoreStatsSnapshot snap, sm.take_score_stats(len));
    for (int l = 0; l < cfg.num_layers; ++l) {
      LayerScoreStats& L = stats->layers[l];
      for (int b = 0; b < kScoreBins; ++b)
        L.histogram[b] +=
            static_cast<uint32_t>(snap.histogram[static_cast<size_t>(l) * kScoreBins + b]);
      L.min = std::min<double>(L.min, snap.minmax[2 * l]);
      L.max = std::max<double>(L.max, snap.minmax[2 * l + 1]);
      const auto* rows = snap.row_max.data() + static_cast<size_t>(l) * len * H;
      L.sequences.back().insert(L.sequences.back().end(), rows,
                                rows + static_cast<size_t>(len) * H);
    }
  }
  stats->tokens += n;
  return Status::Ok();
}

namespace {

// Every recorded row of a layer (all sequences, positions and heads), or those of one KV
// head's query heads (kv >= 0), or only decode-like rows (position >= 1).
std::vector<ScoreRow> rows_of(const LayerScoreStats& L, int n_heads, int group, int kv,
                              bool decode_only) {
  std::vector<ScoreRow> rows;
  for (const std::vector<float>& seq : L.sequences) {
    const int len = static_cast<int>(seq.size() / n_heads);
    for (int t = decode_only ? 1 : 0; t < len; ++t)
      for (int h = 0; h < n_heads; ++h)
        if (kv < 0 || h / group == kv)
          rows.push_back({seq[static_cast<size_t>(t) * n_heads + h], t + 1});
  }
  return rows;
}

// Fallback share of the rows with each row's KV head's φ.
double kv_head_rate(const LayerScoreStats& L, int n_heads, int group,
                    const std::vector<float>& phi_kv, UnifiedType type) {
  int64_t rows = 0, fails = 0;
  for (size_t kv = 0; kv < phi_kv.size(); ++kv) {
    const std::vector<ScoreRow> r = rows_of(L, n_heads, group, static_cast<int>(kv), false);
    rows += static_cast<int64_t>(r.size());
    fails += static_cast<int64_t>(fallback_rate(r, phi_kv[kv], type) * r.size() + 0.5);
  }
  return rows ? static_cast<double>(fails) / rows : 0.0;
}

}  // namespace

Calibration build_calibration(const ScoreStatistics& stats, double coverage) {
  Calibration c;
  c.num_layers = static_cast<int>(stats.layers.size());
  c.num_heads = stats.n_heads;
  c.num_kv_heads = stats.n_kv_heads;
  c.tokens = stats.tokens;
  c.sequences = c.num_layers ? static_cast<int>(stats.layers[0].sequences.size()) : 0;
  c.coverage = coverage;
  const int H = stats.n_heads, group = stats.n_kv_heads ? H / stats.n_kv_heads : 1;
  const double tail = (1.0 - coverage) / 2;
  int64_t fails_layer = 0, fails_kv = 0, n_rows = 0;
  for (const LayerScoreStats& L : stats.layers) {
    CalibrationLayer cl;
    cl.score_min = L.min;
    cl.score_max = L.max;
    cl.score_lo = histogram_quantile(L.histogram, tail, L.min, L.max);
    cl.score_hi = histogram_quantile(L.histogram, 1.0 - tail, L.min, L.max);
    const std::vector<ScoreRow> rows = rows_of(L, H, group, -1, false);
    const std::vector<ScoreRow> decode_rows = rows_of(L, H, group, -1, true);
    cl.row_max_min = cl.row_max_max = rows.empty() ? 0.0 : rows[0].m;
    for (const ScoreRow& r : rows) {
      cl.row_max_min = std::min<double>(cl.row_max_min, r.m);
      cl.row_max_max = std::max<double>(cl.row_max_max, r.m);
    }
    cl.phi = fit_phi(rows, UnifiedType::kF16P);
    for (int kv = 0; kv < stats.n_kv_heads; ++kv)
      cl.phi_kv_heads.push_back(fit_phi(rows_of(L, H, group, kv, false), UnifiedType::kF16P));
    auto& fr = cl.fallback_rate;
    fr["prefill_fp16p"] = fallback_rate(rows, cl.phi, UnifiedType::kF16P);
    fr["prefill_fp16p_kv_head"] = kv_head_rate(L, H, group, cl.phi_kv_heads, UnifiedType::kF16P);
    fr["prefill_bf16p"] = fallback_rate(rows, cl.phi, UnifiedType::kBF16P);
    fr["decode_calibrated"] = fallback_rate(decode_rows, cl.phi, UnifiedType::kF32);
    fr["decode_follow"] = follow_fallback_rate(L.sequences, H, UnifiedType::kF32);
    fr["decode_calibrated_fp16p_range"] = fallback_rate(decode_rows, cl.phi, UnifiedType::kF16P);
    fr["decode_follow_fp16p_range"] = follow_fallback_rate(L.sequences, H, UnifiedType::kF16P);
    n_rows += static_cast<int64_t>(rows.size());
    fails_layer += static_cast<int64_t>(fr["prefill_fp16p"] * rows.size() + 0.5);
    fails_kv += static_cast<int64_t>(fr["prefill_fp16p_kv_head"] * rows.size() + 0.5);
    c.layers.push_back(std::move(cl));
  }
  // Per-KV-head φ only where it changes the result: at most half the fallbacks, and at
  // least 0.01% of the rows fewer.
  const bool kv_better = fails_layer > 0 && 2 * fails_kv <= fails_layer &&
                         (fails_layer - fails_kv) * 10000 >= n_rows;
  c.granularity = kv_better ? "kv_head" : "layer";
  return c;
}

ScoreRange model_score_range(const ScoreStatistics& stats, double coverage) {
  ScoreRange r;
  if (stats.layers.empty()) return r;
  std::vector<uint64_t> all(kScoreBins, 0);
  r.min = stats.layers[0].min;
  r.max = stats.layers[0].max;
  for (const LayerScoreStats& L : stats.layers) {
    for (int b = 0; b < kScoreBins; ++b) all[b] += L.histogram[b];
    r.min = std::min(r.min, L.min);
    r.max = std::max(r.max, L.max);
  }
  const double tail = (1.0 - coverage) / 2;
  r.lo = histogram_quantile(all, tail, r.min, r.max);
  r.hi = histogram_quantile(all, 1.0 - tail, r.min, r.max);
  return r;
}

}  // namespace fdpp
