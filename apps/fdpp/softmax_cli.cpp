#include "softmax_cli.h"

#include <fmt/format.h>

namespace fdpp::cli {

void add_softmax_options(CLI::App* sub, SoftmaxCliOptions& o) {
  sub->add_option("--softmax", o.softmax,
                  "attention softmax: sync (online), unified (one φ per row; rows out of range "
                  "recomputed exactly) or auto (unified decode; unified prefill with a "
                  "calibration file)")
      ->check(CLI::IsMember({"sync", "unified", "auto"}))
      ->capture_default_str();
  sub->add_option("--phi", o.phi,
                  "unified decode's φ: follow (previous row max), calibrated, or auto "
                  "(calibrated when a calibration file exists)")
      ->check(CLI::IsMember({"follow", "calibrated", "auto"}))
      ->capture_default_str();
  sub->add_option("--calibration", o.calibration,
                  "φ calibration file (fdpp calibrate); default: next to the model, then the "
                  "cache directory");
}

void apply_softmax_options(const SoftmaxCliOptions& o, EngineOptions* eo) {
  eo->softmax = o.softmax;
  eo->phi = o.phi;
  eo->calibration = o.calibration;
}

nlohmann::json softmax_json(const SoftmaxStats& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l < s.decode_fallbacks.size(); ++l)
    layers.push_back({{"prefill_fallbacks", s.prefill_fallbacks[l]},
                      {"decode_fallbacks", s.decode_fallbacks[l]}});
  return {{"prefill", s.prefill},
          {"decode", s.decode},
          {"phi", s.phi},
          {"phi_source", s.phi_source},
          {"rows_per_layer", {{"prefill", s.prefill_rows}, {"decode", s.decode_rows}}},
          {"fallbacks", s.fallbacks()},
          {"fallback_rate", s.fallback_rate()},
          {"layers", layers}};
}

std::string softmax_summary(const SoftmaxStats& s) {
  const int64_t rows = s.prefill_rows * static_cast<int64_t>(s.prefill_fallbacks.size()) +
                       s.decode_rows * static_cast<int64_t>(s.decode_fallbacks.size());
  return fmt::format("softmax: prefill {}, decode {}{}: {} of {} unified rows recomputed ({:.4f}%)",
                     s.prefill, s.decode, s.phi.empty() ? "" : " (φ " + s.phi + ")",
                     s.fallbacks(), rows, 100.0 * s.fallback_rate());
}

}  // namespace fdpp::cli
