// The attention-softmax options every engine command shares (--softmax, --phi,
// --calibration; design.md, Technique 1) and how the fallback record is reported.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "fdpp/engine.h"

namespace fdpp::cli {

struct SoftmaxCliOptions {
  std::string softmax = "sync";
  std::string phi = "auto";
  std::string calibration;
};

void add_softmax_options(CLI::App* sub, SoftmaxCliOptions& o);
void apply_softmax_options(const SoftmaxCliOptions& o, EngineOptions* eo);

// {"prefill", "decode", "phi", "phi_source", "rows": {...}, "fallbacks", "fallback_rate",
//  "layers": [{"prefill_fallbacks", "decode_fallbacks"}, ...]}
nlohmann::json softmax_json(const SoftmaxStats& s);
// "unified decode (φ follow): 3 of 40960 rows recomputed (0.007%)", one line.
std::string softmax_summary(const SoftmaxStats& s);

}  // namespace fdpp::cli
