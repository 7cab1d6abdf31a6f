// The measurement behind fdpp calibrate (design.md, Technique 1): text runs through the model
// (synchronized softmax), the scaled attention scores s = q·k/√d of every layer are recorded,
// and φ per layer (and per KV head) is fitted for the unified softmax. calibrate returns the
// report; save_calibration_report writes the file the engine loads, so an app prints the
// report before a write can fail.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

struct CalibrateOptions {
  std::string model;  // Hugging Face model folder
  std::string text;   // a calibration text file; empty: the built-in text
  int tokens = 0;     // use at most this many tokens of the text; 0: all
  int seq_len = 0;    // tokens per sequence; 0: min(context, 4096)
  std::string device = "auto";  // "cpu", "cuda" or "auto"
  std::string dtype;            // "fp16" or "bf16" on CUDA; empty: the engine's choice
  double coverage = 0.9999;     // share of scores the reported range covers, in (0.5, 1)
};

// One layer's scores and its φ, all in s units.
struct CalibrateLayerRow {
  double score_min = 0, score_lo = 0, score_hi = 0, score_max = 0;  // lo / hi: the coverage range
  double row_max_min = 0, row_max_max = 0;
  float phi = 0;
  // Predicted fallback rates by (path, φ source): prefill_fp16p, prefill_fp16p_kv_head,
  // prefill_bf16p, decode_calibrated, decode_follow, decode_calibrated_fp16p_range,
  // decode_follow_fp16p_range (tuning/score_statistics.h: build_calibration).
  std::map<std::string, double> fallback_rate;
};

struct Calibration;  // the file's contents (tuning/calibration.h)

struct CalibrateReport {
  std::string model_type;
  int head_dim = 0;
  std::string device;  // the engine's: "cpu" | "cuda"
  int seq_len = 0;     // tokens per sequence, BOS included
  int64_t tokens = 0;  // tokens run through the model
  int sequences = 0;
  double coverage = 0;
  // All layers' scores: [lo, hi] covers `coverage` of them.
  double score_min = 0, score_lo = 0, score_hi = 0, score_max = 0;
  std::vector<CalibrateLayerRow> layers;
  std::string granularity;  // "layer" or "kv_head": which φ the engine uses
  std::string model;        // the folder, for the default file path
  std::shared_ptr<const Calibration> calibration;
};

// After each sequence: the tokens run through the model so far.
using CalibrateProgress = std::function<void(int64_t tokens)>;

// Loads the model on the device with the synchronized softmax and runs the text through it.
// InvalidArgument for a bad option (its flag named) or a text without tokens.
Result<CalibrateReport> calibrate(const CalibrateOptions& options,
                                  const CalibrateProgress& progress = {});

// Writes the calibration to `out`, or when it is empty to <model>/fdpp_calibration.json if
// the folder is writable, else $XDG_CACHE_HOME/fdpp/calibration/<fingerprint>.json (where
// the engine looks); returns the path written.
Result<std::string> save_calibration_report(const CalibrateReport& report, const std::string& out);

}  // namespace fdpp
