// The φ calibration file of the unified-max softmax (design.md, Technique 1): what
// `fdpp calibrate` writes and the engine loads. JSON:
//   {"format": "fdpp-softmax-calibration", "version": 1,
//    "model": {"fingerprint": "…", "model_type": "llama", "num_layers": 32, "num_heads": 32,
//              "num_kv_heads": 32, "head_dim": 128},
//    "text": "built-in", "tokens": 4096, "sequences": 2, "coverage": 0.9999,
//    "granularity": "layer" | "kv_head",
//    "layers": [{"phi": 1.5, "phi_kv_heads": [...], "score_min": …, "score_lo": …,
//                "score_hi": …, "score_max": …, "row_max_min": …, "row_max_max": …,
//                "fallback_rate": {…}}, …]}
// φ and every score are in units of s = q·k/√head_dim. Only "format", "version", "model"'s
// shape, "layers"[i]."phi" (and "phi_kv_heads" when granularity is kv_head) are read back;
// the rest documents the run (fdpp calibrate prints it).
//
// Where it lives: <model dir>/fdpp_calibration.json when the folder is writable, else
// <cache dir>/calibration/<fingerprint>.json, the cache directory of every cached file
// (fdpp_cache_dir: $FDPP_CACHE_DIR, else $XDG_CACHE_HOME/fdpp, else ~/.cache/fdpp); a file's
// fingerprint must match the model's for the engine to pick it up by itself, and one it
// finds but cannot read is skipped with a warning. Written atomically (a unique temporary
// file, then rename), so concurrent `fdpp calibrate` runs never leave a torn file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fdpp/status.h"
#include "model/config.h"

namespace fdpp {

struct CalibrationLayer {
  float phi = 0.f;                 // s units
  std::vector<float> phi_kv_heads;  // (num_kv_heads), or empty
  // Statistics of the run (written, not needed to load): scores and row maxes.
  double score_min = 0, score_lo = 0, score_hi = 0, score_max = 0;
  double row_max_min = 0, row_max_max = 0;
  std::map<std::string, double> fallback_rate;  // predicted, by (path, φ source)
};

struct Calibration {
  std::string fingerprint;
  std::string model_type;
  int num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  std::string text;  // "built-in" or the file name
  int64_t tokens = 0;
  int sequences = 0;
  double coverage = 0.9999;         // share of scores between score_lo and score_hi
  std::string granularity = "layer";  // which φ the engine uses: "layer" or "kv_head"
  std::vector<CalibrationLayer> layers;
};

constexpr const char* kCalibrationFormat = "fdpp-softmax-calibration";
constexpr int kCalibrationVersion = 1;

// Parses and validates the file's text; errors name `where` and the field at fault.
Result<Calibration> parse_calibration(const std::string& text, const std::string& where);
std::string serialize_calibration(const Calibration& c);
Result<Calibration> load_calibration(const std::filesystem::path& path);
Status save_calibration(const Calibration& c, const std::filesystem::path& path);

// The file must describe this model's shape (layers, heads, KV heads, head_dim).
Status check_calibration_fits(const Calibration& c, const ModelConfig& cfg,
                              const std::string& where);
// φ per (layer, query head), (num_layers, num_heads) row-major: the layer's φ, or its KV
// head's with granularity kv_head (query head h reads KV head h / group).
std::vector<float> calibration_phi(const Calibration& c);

// A hash of config.json and of each *.safetensors file's size and first, middle and last
// MiB (FNV-1a 64, 16 hex digits): different weights of the same shape differ.
Result<std::string> model_fingerprint(const std::filesystem::path& model_dir);

// Where calibrate writes by default, and where the engine looks (in this order).
std::filesystem::path calibration_path_in_model(const std::filesystem::path& model_dir);
std::filesystem::path calibration_path_in_cache(const std::string& fingerprint);
// Whether a file can be created in `dir` (the model folder may be read-only).
bool directory_writable(const std::filesystem::path& dir);

// The built-in English calibration text (calibration_text.cpp), a few thousand tokens.
const char* builtin_calibration_text();

}  // namespace fdpp
