#include "tuning/calibration.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_document.h"
#include "core/regular_file.h"
#include "tuning/gemm_table_files.h"

namespace fdpp {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kKind = "calibration";  // JsonDocument's error prefix

Status bad(const std::string& where, const std::string& what) {
  return JsonDocument{kKind, where}.bad(what);
}

// A required integer field of `obj`, within [lo, hi] (an int range).
Status read_int(const json& obj, const char* key, int lo, int hi, const std::string& where,
                int* out) {
  int64_t v = 0;
  const JsonDocument doc{kKind, where};
  FDPP_RETURN_IF_ERROR(doc.read_int(obj, key, lo, hi, &v));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status read_finite(const json& v, const std::string& what, const std::string& where,
                   float* out) {
  if (!v.is_number()) return bad(where, what + " must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > 1e6)
    return bad(where, fmt::format("{} = {} is not a finite score", what, d));
  *out = static_cast<float>(d);
  return Status::Ok();
}

double number_or(const json& obj, const char* key, double fallback) {
  return obj.contains(key) && obj[key].is_number() ? obj[key].get<double>() : fallback;
}

// FNV-1a, 64 bits.
struct Fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  }
  void add(const std::string& s) { add(s.data(), s.size()); }
};

// Adds `n` bytes of `fd` from `offset` (fewer at the end of the file).
Status hash_range(int fd, uint64_t offset, uint64_t n, Fnv* h, const fs::path& p) {
  std::vector<char> buf(static_cast<size_t>(n));
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t r = ::pread(fd, buf.data() + got, buf.size() - got,
                              static_cast<off_t>(offset + got));
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError(fmt::format("reading {}: {}", p.string(), std::strerror(errno)));
    }
    got += static_cast<size_t>(r);
  }
  h->add(buf.data(), got);
  return Status::Ok();
}

}  // namespace

Result<Calibration> parse_calibration(const std::string& text, const std::string& where) {
  FDPP_ASSIGN_OR_RETURN(const json j, parse_json_document({kKind, where}, text,
                                                          kCalibrationFormat, kCalibrationVersion));
  if (!j.contains("model") || !j["model"].is_object()) return bad(where, "no \"model\" object");
  const json& m = j["model"];
  Calibration c;
  FDPP_RETURN_IF_ERROR(read_int(m, "num_layers", 1, 100000, where, &c.num_layers));
  FDPP_RETURN_IF_ERROR(read_int(m, "num_heads", 1, 100000, where, &c.num_heads));
  FDPP_RETURN_IF_ERROR(read_int(m, "num_kv_heads", 1, 100000, where, &c.num_kv_heads));
  FDPP_RETURN_IF_ERROR(read_int(m, "head_dim", 1, 100000, where, &c.head_dim));
  if (c.num_heads % c.num_kv_heads != 0)
    return bad(where, fmt::format("{} heads are not a multiple of {} KV heads", c.num_heads,
                                  c.num_kv_heads));
  if (m.contains("fingerprint") && m["fingerprint"].is_string())
    c.fingerprint = m["fingerprint"].get<std::string>();
  if (m.contains("model_type") && m["model_type"].is_string())
    c.model_type = m["model_type"].get<std::string>();
  if (j.contains("text") && j["text"].is_string()) c.text = j["text"].get<std::string>();
  c.tokens = static_cast<int64_t>(number_or(j, "tokens", 0));
  c.sequences = static_cast<int>(number_or(j, "sequences", 0));
  c.coverage = number_or(j, "coverage", 0.9999);
  if (j.contains("granularity")) {
    if (!j["granularity"].is_string() ||
        (j["granularity"] != "layer" && j["granularity"] != "kv_head"))
      return bad(where, "\"granularity\" must be \"layer\" or \"kv_head\"");
    c.granularity = j["granularity"].get<std::string>();
  }
  if (!j.contains("layers") || !j["layers"].is_array())
    return bad(where, "no \"layers\" array");
  const json& layers = j["layers"];
  if (static_cast<int64_t>(layers.size()) != c.num_layers)
    return bad(where, fmt::format("{} entries in \"layers\" for num_layers {}", layers.size(),
                                  c.num_layers));
  for (size_t i = 0; i < layers.size(); ++i) {
    const json& L = layers[i];
    const std::string at = fmt::format("layers[{}]", i);
    if (!L.is_object() || !L.contains("phi")) return bad(where, at + " has no \"phi\"");
    CalibrationLayer cl;
    FDPP_RETURN_IF_ERROR(read_finite(L["phi"], at + ".phi", where, &cl.phi));
    if (L.contains("phi_kv_heads")) {
      const json& ph = L["phi_kv_heads"];
      if (!ph.is_array() || static_cast<int64_t>(ph.size()) != c.num_kv_heads)
        return bad(where, fmt::format("{}.phi_kv_heads must hold num_kv_heads = {} values", at,
                                      c.num_kv_heads));
      for (size_t k = 0; k < ph.size(); ++k) {
        float v = 0;
        FDPP_RETURN_IF_ERROR(
            read_finite(ph[k], fmt::format("{}.phi_kv_heads[{}]", at, k), where, &v));
        cl.phi_kv_heads.push_back(v);
      }
    } else if (c.granularity == "kv_head") {
      return bad(where, at + " has no \"phi_kv_heads\" but the granularity is kv_head");
    }
    cl.score_min = number_or(L, "score_min", 0);
    cl.score_lo = number_or(L, "score_lo", 0);
    cl.score_hi = number_or(L, "score_hi", 0);
    cl.score_max = number_or(L, "score_max", 0);
    cl.row_max_min = number_or(L, "row_max_min", 0);
    cl.row_max_max = number_or(L, "row_max_max", 0);
    if (L.contains("fallback_rate") && L["fallback_rate"].is_object())
      for (const auto& [k, v] : L["fallback_rate"].items())
        if (v.is_number()) cl.fallback_rate[k] = v.get<double>();
    c.layers.push_back(std::move(cl));
  }
  return c;
}

std::string serialize_calibration(const Calibration& c) {
  json j;
  j["format"] = kCalibrationFormat;
  j["version"] = kCalibrationVersion;
  j["model"] = {{"fingerprint", c.fingerprint}, {"model_type", c.model_type},
                {"num_layers", c.num_layers},   {"num_heads", c.num_heads},
                {"num_kv_heads", c.num_kv_heads}, {"head_dim", c.head_dim}};
  j["units"] = "s = q.k / sqrt(head_dim)";
  j["text"] = c.text;
  j["tokens"] = c.tokens;
  j["sequences"] = c.sequences;
  j["coverage"] = c.coverage;
  j["granularity"] = c.granularity;
  json layers = json::array();
  for (const CalibrationLayer& L : c.layers) {
    json o = {{"phi", L.phi},
              {"score_min", L.score_min},
              {"score_lo", L.score_lo},
              {"score_hi", L.score_hi},
              {"score_max", L.score_max},
              {"row_max_min", L.row_max_min},
              {"row_max_max", L.row_max_max}};
    if (!L.phi_kv_heads.empty()) o["phi_kv_heads"] = L.phi_kv_heads;
    if (!L.fallback_rate.empty()) o["fallback_rate"] = L.fallback_rate;
    layers.push_back(std::move(o));
  }
  j["layers"] = std::move(layers);
  return j.dump(1) + "\n";
}

Result<Calibration> load_calibration(const fs::path& path) {
  auto text = read_regular_file(path);
  if (!text.ok()) return text.status().with_context("calibration");
  return parse_calibration(*text, path.string());
}

Status save_calibration(const Calibration& c, const fs::path& path) {
  // A reader (or a second `fdpp calibrate`) never sees half a file, nor two interleaved.
  return write_file_atomically(path, serialize_calibration(c));
}

Status check_calibration_fits(const Calibration& c, const ModelConfig& cfg,
                              const std::string& where) {
  const auto mismatch = [&](const char* what, int file, int model) {
    return bad(where, fmt::format("{} {}, the model has {}", what, file, model));
  };
  if (c.num_layers != cfg.num_layers) return mismatch("num_layers", c.num_layers, cfg.num_layers);
  if (c.num_heads != cfg.num_heads) return mismatch("num_heads", c.num_heads, cfg.num_heads);
  if (c.num_kv_heads != cfg.num_kv_heads)
    return mismatch("num_kv_heads", c.num_kv_heads, cfg.num_kv_heads);
  if (c.head_dim != cfg.head_dim) return mismatch("head_dim", c.head_dim, cfg.head_dim);
  return Status::Ok();
}

std::vector<float> calibration_phi(const Calibration& c) {
  std::vector<float> phi;
  const int group = c.num_heads / c.num_kv_heads;
  for (const CalibrationLayer& L : c.layers)
    for (int h = 0; h < c.num_heads; ++h)
      phi.push_back(c.granularity == "kv_head" && !L.phi_kv_heads.empty()
                        ? L.phi_kv_heads[h / group]
                        : L.phi);
  return phi;
}

Result<std::string> model_fingerprint(const fs::path& dir) {
  Fnv h;
  {
    auto config = read_regular_file(dir / "config.json");
    if (!config.ok()) return config.status();
    h.add(*config);
  }
  std::vector<fs::path> shards;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") shards.push_back(e.path());
  if (ec) return IoError(fmt::format("listing {}: {}", dir.string(), ec.message()));
  std::sort(shards.begin(), shards.end());
  constexpr uint64_t kMiB = 1 << 20;
  for (const fs::path& p : shards) {
    const uint64_t size = fs::file_size(p, ec);
    if (ec) return IoError(fmt::format("{}: {}", p.string(), ec.message()));
    h.add(p.filename().string());
    h.add(&size, sizeof size);
    FDPP_ASSIGN_OR_RETURN(const UniqueFd fd, open_regular_file(p));
    FDPP_RETURN_IF_ERROR(hash_range(fd.get(), 0, std::min(size, kMiB), &h, p));
    if (size > 2 * kMiB) FDPP_RETURN_IF_ERROR(hash_range(fd.get(), size / 2, kMiB, &h, p));
    if (size > kMiB) FDPP_RETURN_IF_ERROR(hash_range(fd.get(), size - kMiB, kMiB, &h, p));
  }
  return fmt::format("{:016x}", h.h);
}

fs::path calibration_path_in_model(const fs::path& model_dir) {
  return model_dir / "fdpp_calibration.json";
}

fs::path calibration_path_in_cache(const std::string& fingerprint) {
  return fdpp_cache_dir() / "calibration" / (fingerprint + ".json");
}

bool directory_writable(const fs::path& dir) {
  return ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace fdpp
