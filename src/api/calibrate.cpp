// fdpp calibrate's measurement (fdpp/calibrate.h): text through the model with the
// synchronized softmax, the scores of every layer recorded (tuning/score_statistics.h), and
// φ per layer and per KV head fitted to them (tuning/calibration.h; design.md, Technique 1).
#include "fdpp/calibrate.h"

#include <algorithm>

#include "fdpp/device.h"
#include "fdpp/engine.h"
#include "core/regular_file.h"
#include "model/config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tuning/calibration.h"
#include "tuning/score_statistics.h"

namespace fdpp {

Result<CalibrateReport> calibrate(const CalibrateOptions& o, const CalibrateProgress& progress) {
  if (o.tokens < 0 || o.seq_len < 0)
    return InvalidArgument("--tokens and --seq-len must not be negative");
  if (!(o.coverage > 0.5 && o.coverage < 1.0))
    return InvalidArgument("--coverage must lie in (0.5, 1)");
  auto cfg = load_model_config(o.model);
  if (!cfg.ok()) return cfg.status();
  const int seq_len = o.seq_len > 0 ? o.seq_len : std::min(cfg->max_position_embeddings, 4096);

  std::string text = builtin_calibration_text();
  if (!o.text.empty()) {
    auto t = read_regular_file(o.text);
    if (!t.ok()) return t.status().with_context("--text");
    text = std::move(t).value();
  }

  EngineOptions eo;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  eo.context = seq_len;
  eo.prefill_chunk = seq_len;
  eo.max_batch = 1;
  eo.cuda_graphs = false;
  eo.softmax = "sync";  // the exact path measures the scores
  auto engine_or = Engine::create(eo);
  if (!engine_or.ok()) return engine_or.status();
  Engine& engine = **engine_or;
  const Tokenizer* tok = engine.tokenizer();
  if (!tok) return InvalidArgument(o.model + " has no tokenizer: calibration needs text");
  auto ids_or = tok->encode(text, false);
  if (!ids_or.ok()) return ids_or.status();
  std::vector<int> ids = std::move(ids_or).value();
  if (o.tokens > 0 && static_cast<int>(ids.size()) > o.tokens) ids.resize(o.tokens);
  if (ids.empty()) return InvalidArgument("the calibration text has no tokens");

  // Sequences of at most seq_len tokens, each starting with BOS as a prompt does.
  const int bos = tok->bos_id();
  const int body = seq_len - (bos >= 0 ? 1 : 0);
  if (body < 1) return InvalidArgument("--seq-len is too short");
  ScoreStatistics stats;
  for (size_t at = 0; at < ids.size(); at += body) {
    std::vector<int> seq;
    seq.reserve(static_cast<size_t>(body) + 1);
    if (bos >= 0) seq.push_back(bos);
    for (size_t i = at; i < std::min(ids.size(), at + body); ++i) seq.push_back(ids[i]);
    FDPP_RETURN_IF_ERROR(collect_score_statistics(engine.model(), seq, &stats));
    if (progress) progress(stats.tokens);
  }

  auto c = std::make_shared<Calibration>(build_calibration(stats, o.coverage));
  auto fp = model_fingerprint(o.model);
  if (!fp.ok()) return fp.status();
  c->fingerprint = *fp;
  c->model_type = cfg->model_type;
  c->head_dim = cfg->head_dim;
  c->text = o.text.empty() ? "built-in" : o.text;

  CalibrateReport r;
  r.model_type = cfg->model_type;
  r.head_dim = cfg->head_dim;
  r.device = eo.device;
  r.seq_len = seq_len;
  r.tokens = stats.tokens;
  r.sequences = c->sequences;
  r.coverage = o.coverage;
  const ScoreRange all = model_score_range(stats, o.coverage);
  r.score_min = all.min;
  r.score_lo = all.lo;
  r.score_hi = all.hi;
  r.score_max = all.max;
  for (const CalibrationLayer& L : c->layers)
    r.layers.push_back({L.score_min, L.score_lo, L.score_hi, L.score_max, L.row_max_min,
                        L.row_max_max, L.phi, L.fallback_rate});
  r.granularity = c->granularity;
  r.model = o.model;
  r.calibration = std::move(c);
  return r;
}

Result<std::string> save_calibration_report(const CalibrateReport& r, const std::string& out) {
  if (!r.calibration) return InvalidArgument("save_calibration_report: the report holds no calibration");
  std::filesystem::path path = out;
  if (path.empty())
    path = directory_writable(r.model) ? calibration_path_in_model(r.model)
                                       : calibration_path_in_cache(r.calibration->fingerprint);
  FDPP_RETURN_IF_ERROR(save_calibration(*r.calibration, path));
  return path.string();
}

}  // namespace fdpp
