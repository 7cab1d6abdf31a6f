// The engine's unified-softmax setup and statistics (design.md, Technique 1).
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fdpp/engine.h"
#include "model/model.h"
#include "tuning/calibration.h"
#include "runtime/softmax_setup.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

struct Found {
  Calibration calibration;
  std::string where;
};

// A calibration file the engine finds by itself. One it cannot read or parse (a torn write,
// a directory or FIFO in its place) is a cache entry, not the user's input: it counts as
// absent, with a warning, so that one bad file does not fail every later run until someone
// deletes it. One that parses must fit the model (else an error: it names another shape)
// and carry this model's fingerprint (else it belongs to other weights of the same shape:
// skipped with a warning).
Result<std::optional<Found>> try_file(const fs::path& path, const ModelConfig& cfg,
                                      const std::string& fingerprint) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Found>();
  auto loaded = load_calibration(path);
  if (!loaded.ok()) {
    spdlog::warn("{}; ignored: run fdpp calibrate again", loaded.status().message());
    return std::optional<Found>();
  }
  Calibration c = std::move(loaded).value();
  FDPP_RETURN_IF_ERROR(check_calibration_fits(c, cfg, path.string()));
  if (c.fingerprint != fingerprint) {
    spdlog::warn("calibration {} was made for other weights (fingerprint {}, the model's {}); "
                 "ignored: run fdpp calibrate again",
                 path.string(), c.fingerprint, fingerprint);
    return std::optional<Found>();
  }
  return std::optional<Found>(Found{std::move(c), path.string()});
}

Result<std::optional<Found>> find_calibration(const EngineOptions& o, const ModelConfig& cfg) {
  if (!o.calibration.empty()) {
    FDPP_ASSIGN_OR_RETURN(Calibration c, load_calibration(o.calibration));
    FDPP_RETURN_IF_ERROR(check_calibration_fits(c, cfg, o.calibration.string()));
    auto fp = model_fingerprint(o.model_dir);
    if (fp.ok() && *fp != c.fingerprint)
      spdlog::warn("calibration {} was made for other weights (fingerprint {}, the model's {})",
                   o.calibration.string(), c.fingerprint, *fp);
    return std::optional<Found>(Found{std::move(c), o.calibration.string()});
  }
  auto fp = model_fingerprint(o.model_dir);
  if (!fp.ok()) {
    spdlog::warn("no calibration lookup: {}", fp.status().message());
    return std::optional<Found>();
  }
  FDPP_ASSIGN_OR_RETURN(auto here, try_file(calibration_path_in_model(o.model_dir), cfg, *fp));
  if (here) return here;
  return try_file(calibration_path_in_cache(*fp), cfg, *fp);
}

}  // namespace

Status setup_softmax(const EngineOptions& o, Model& model) {
  const ModelConfig& cfg = model.config();
  if (o.softmax != "sync" && o.softmax != "unified" && o.softmax != "auto")
    return InvalidArgument(fmt::format("--softmax {}: expected sync, unified or auto", o.softmax));
  if (o.phi != "follow" && o.phi != "calibrated" && o.phi != "auto")
    return InvalidArgument(fmt::format("--phi {}: expected follow, calibrated or auto", o.phi));
  SoftmaxSettings s;
  if (o.softmax == "sync") {
    s.phi_source = "-";
    return model.softmax().configure(s);
  }
  FDPP_ASSIGN_OR_RETURN(std::optional<Found> found, find_calibration(o, cfg));
  if (found) {
    s.phi = calibration_phi(found->calibration);
    s.phi_source = "calibration " + found->where;
  } else {
    s.phi_source = "default 0";
  }
  // auto: calibrated φ where a calibration exists, else row-following. On stories260K the
  // per-layer φ predicted the row max better (fewer rows outside fdpp calibrate's fp16 P
  // range than the previous row's max left); in the decode kernels' fp32 range both left
  // no row out (docs/experiments/log.md, "engine_softmax.cpp: calibrated φ or
  // row-following"). Row-following needs no file.
  s.follow = o.phi == "follow" || (o.phi == "auto" && !found);
  s.decode = SoftmaxMode::kUnified;
  s.prefill = o.softmax == "unified" || found ? SoftmaxMode::kUnified : SoftmaxMode::kSynchronized;
  if (!found && (o.softmax == "unified" || o.phi == "calibrated"))
    spdlog::warn("no φ calibration for {} (run fdpp calibrate): φ = 0; rows outside its range "
                 "are recomputed exactly",
                 o.model_dir.string());
  return model.softmax().configure(s);
}

int64_t SoftmaxStats::fallbacks() const {
  int64_t n = 0;
  for (int64_t v : prefill_fallbacks) n += v;
  for (int64_t v : decode_fallbacks) n += v;
  return n;
}

double SoftmaxStats::fallback_rate() const {
  const int64_t rows = (prefill_rows * static_cast<int64_t>(prefill_fallbacks.size())) +
                       (decode_rows * static_cast<int64_t>(decode_fallbacks.size()));
  return rows > 0 ? static_cast<double>(fallbacks()) / static_cast<double>(rows) : 0.0;
}

Result<SoftmaxStats> Engine::softmax_stats() {
  ModelSoftmax& sm = model().softmax();
  FDPP_ASSIGN_OR_RETURN(SoftmaxCounters c, sm.counters());
  const SoftmaxSettings& s = sm.settings();
  const auto name = [](SoftmaxMode m) { return m == SoftmaxMode::kUnified ? "unified" : "sync"; };
  SoftmaxStats r;
  r.prefill = name(s.prefill);
  r.decode = name(s.decode);
  r.phi = s.decode == SoftmaxMode::kUnified ? (s.follow ? "follow" : "calibrated") : "";
  r.phi_source = s.phi_source;
  r.prefill_rows = c.prefill_rows;
  r.decode_rows = c.decode_rows;
  r.prefill_fallbacks = c.prefill_fallbacks;
  r.decode_fallbacks = c.decode_fallbacks;
  return r;
}

Status Engine::reset_softmax_stats() { return model().softmax().reset_counters(); }

}  // namespace fdpp
