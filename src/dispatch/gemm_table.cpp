#include "dispatch/gemm_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_document.h"
#include "core/regular_file.h"

namespace fdpp {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

constexpr const char* kKind = "GEMM table";  // JsonDocument's error prefix

Status bad(const std::string& where, const std::string& what) {
  return JsonDocument{kKind, where}.bad(what);
}

bool is_flat_config(int c) { return c >= 0 && c < kFlatConfigCount; }

int flat_config_index(const std::string& name) {
  for (int i = 0; i < kFlatConfigCount; ++i)
    if (name == kFlatConfigs[i].name) return i;
  return -1;
}

// The one place names become choices (JSON and the built-in rows). "default": nullopt.
Result<std::optional<ImplChoice>> choice_from_names(const std::string& impl,
                                                    const std::string& config, int64_t splits,
                                                    int64_t algo, const std::string& where) {
  if (splits < 0 || splits > kMaxSplitK)
    return bad(where, fmt::format("\"splits\" = {} outside [0, {}]", splits, kMaxSplitK));
  if (algo < 0 || algo > kMaxCublasAlgo || (algo > 0 && impl != "cublas"))
    return bad(where, fmt::format("\"algo\" = {}: a cuBLASLt heuristic index in [0, {}], for "
                                  "\"cublas\" only",
                                  algo, kMaxCublasAlgo));
  if (impl == "default") return std::optional<ImplChoice>{};
  if (impl == "cublas")
    return std::optional<ImplChoice>{ImplChoice{GemmImpl::kCublas, -1, 0, static_cast<int>(algo)}};
  if (impl == "gemv")
    return std::optional<ImplChoice>{ImplChoice{GemmImpl::kGemv, -1, static_cast<int>(splits)}};
  if (impl == "flat") {
    const int c = flat_config_index(config);
    if (c < 0)
      return bad(where, fmt::format("flat configuration \"{}\" is not compiled into this fdpp "
                                    "(its kernels changed since the table was made: run fdpp tune)",
                                    config));
    return std::optional<ImplChoice>{ImplChoice{GemmImpl::kFlat, c, static_cast<int>(splits)}};
  }
  return bad(where, fmt::format("\"impl\" = \"{}\" (expected gemv, flat, cublas or default)", impl));
}

// Which side of M1 / M2 an M falls on; a "default" entry as the built-in rule serves it.
int served_rank(const std::optional<ImplChoice>& c, int m) {
  if (c) return gemm_impl_rank(c->impl);
  if (m <= kDefaultGemvMaxM) return 0;
  return m <= kDefaultFlatMaxM ? 1 : 2;
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

Status read_int(const json& obj, const char* key, int64_t lo, int64_t hi,
                const std::string& where, int64_t* out) {
  return JsonDocument{kKind, where}.read_int(obj, key, lo, hi, out);
}

Status read_string(const json& obj, const char* key, const std::string& where, std::string* out) {
  if (!obj.contains(key) || !obj[key].is_string())
    return bad(where, fmt::format("\"{}\" must be a string", key));
  *out = obj[key].get<std::string>();
  return Status::Ok();
}

}  // namespace

std::string GpuIdentity::summary() const {
  return fmt::format("{} (sm_{}{}, {} SMs, CUDA {})", name, cc_major, cc_minor, sm_count,
                     cuda_version());
}

std::string GpuIdentity::cuda_version() const {
  return fmt::format("{}.{}", cuda_runtime / 1000, (cuda_runtime % 1000) / 10);
}

int gemm_impl_rank(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::kGemv: return 0;
    case GemmImpl::kFlat: return 1;
    case GemmImpl::kCublas: return 2;
  }
  return 3;
}

std::string gemm_entry_impl_name(const std::optional<ImplChoice>& c) {
  return c ? gemm_impl_name(c->impl) : "default";
}

std::string gemm_entry_config_name(const std::optional<ImplChoice>& c) {
  return c && c->impl == GemmImpl::kFlat ? kFlatConfigs[c->config].name : "";
}

// ---- the table ------------------------------------------------------------------------

Result<TunedGemmTable> TunedGemmTable::create(GpuIdentity gpu, DType dtype,
                                              std::vector<GemmTableShape> shapes) {
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return InvalidArgument(fmt::format("GEMM table: dtype {} (the table is for f16 or bf16)",
                                       dtype_name(dtype)));
  TunedGemmTable t;
  t.gpu_ = std::move(gpu);
  t.dtype_ = dtype;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmTableShape& s = shapes[i];
    const std::string where = fmt::format("shape {} [{}, {}]", s.name, s.n, s.k);
    if (s.n < 1 || s.k < 1 || s.n > kMax32 || s.k > kMax32)
      return InvalidArgument(fmt::format("GEMM table {}: N and K must be in [1, {}]", where, kMax32));
    if (s.entries.empty()) return InvalidArgument(fmt::format("GEMM table {}: no entries", where));
    if (!t.index_.emplace(key(s.n, s.k), i).second)
      return InvalidArgument(fmt::format("GEMM table {}: [N, K] listed twice", where));
    int prev = 0;
    for (const GemmTableEntry& e : s.entries) {
      if (e.m <= prev || e.m > kMaxGemmTableM)
        return InvalidArgument(fmt::format(
            "GEMM table {}: entry M = {} (M must ascend, from 1 up to {})", where, e.m, kMaxGemmTableM));
      if (e.choice && e.choice->impl == GemmImpl::kFlat && !is_flat_config(e.choice->config))
        return InvalidArgument(fmt::format("GEMM table {}: M = {} names flat configuration {}",
                                           where, e.m, e.choice->config));
      if (e.choice && (e.choice->splits < 0 || e.choice->splits > kMaxSplitK))
        return InvalidArgument(
            fmt::format("GEMM table {}: M = {} asks for {} splits", where, e.m, e.choice->splits));
      prev = e.m;
    }
    std::vector<std::optional<ImplChoice>> v(static_cast<size_t>(s.entries.back().m));
    int lo = 1;
    for (const GemmTableEntry& e : s.entries) {
      for (int m = lo; m <= e.m; ++m) v[m - 1] = e.choice;
      lo = e.m + 1;
    }
    const std::optional<ImplChoice>& last = s.entries.back().choice;
    t.beyond_.push_back(last && last->impl == GemmImpl::kCublas ? last : std::nullopt);
    t.by_m_.push_back(std::move(v));
  }
  t.shapes_ = std::move(shapes);
  return t;
}

std::optional<ImplChoice> TunedGemmTable::lookup(int64_t m, int64_t n, int64_t k,
                                                 DType dtype) const {
  if (dtype != dtype_ || m < 1 || n < 1 || k < 1 || n > kMax32 || k > kMax32) return std::nullopt;
  const auto it = index_.find(key(n, k));
  if (it == index_.end()) return std::nullopt;
  const std::vector<std::optional<ImplChoice>>& v = by_m_[it->second];
  if (m <= static_cast<int64_t>(v.size())) return v[static_cast<size_t>(m - 1)];
  return beyond_[it->second];
}

const GemmTableShape* TunedGemmTable::find(int64_t n, int64_t k) const {
  if (n < 1 || k < 1 || n > kMax32 || k > kMax32) return nullptr;
  const auto it = index_.find(key(n, k));
  return it == index_.end() ? nullptr : &shapes_[it->second];
}

GemmThresholds gemm_thresholds(const TunedGemmTable& table, const GemmTableShape& shape) {
  GemmThresholds t;
  if (shape.entries.empty()) return t;
  int prev_rank = 0;
  for (int m = 1; m <= shape.entries.back().m; ++m) {
    const int r = served_rank(table.lookup(m, shape.n, shape.k, table.dtype()), m);
    if (r == 0) t.m1 = m;
    if (r <= 1) t.m2 = m;
    if (r < prev_rank) t.monotone = false;
    prev_rank = std::max(prev_rank, r);
  }
  return t;
}

// ---- files ----------------------------------------------------------------------------

std::string serialize_gemm_table(const TunedGemmTable& table) {
  // By hand around compact entries: one line per entry keeps a 500-M sweep readable.
  const GpuIdentity& g = table.gpu();
  json gpu = {{"name", g.name},
              {"sm_count", g.sm_count},
              {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
              {"cuda_runtime", g.cuda_runtime}};
  std::string s = "{\n";
  s += fmt::format(" \"format\": {},\n \"version\": {},\n", json(kGemmTableFormat).dump(),
                   kGemmTableVersion);
  s += fmt::format(" \"gpu\": {},\n \"dtype\": {},\n", gpu.dump(), json(dtype_name(table.dtype())).dump());
  s += fmt::format(" \"created\": {},\n \"models\": {},\n", json(table.created).dump(),
                   json(table.models).dump());
  s += " \"shapes\": [";
  for (size_t i = 0; i < table.shapes().size(); ++i) {
    const GemmTableShape& sh = table.shapes()[i];
    const GemmThresholds th = gemm_thresholds(table, sh);
    s += fmt::format("{}\n  {{\"name\": {}, \"n\": {}, \"k\": {}, \"m1\": {}, \"m2\": {}, \"entries\": [",
                     i == 0 ? "" : ",", json(sh.name).dump(), sh.n, sh.k, th.m1, th.m2);
    for (size_t j = 0; j < sh.entries.size(); ++j) {
      const GemmTableEntry& e = sh.entries[j];
      nlohmann::ordered_json je = {{"m", e.m}, {"impl", gemm_entry_impl_name(e.choice)}};
      if (e.choice && e.choice->impl == GemmImpl::kFlat)
        je["config"] = gemm_entry_config_name(e.choice);
      if (e.choice && e.choice->impl != GemmImpl::kCublas && e.choice->splits > 0)
        je["splits"] = e.choice->splits;
      if (e.choice && e.choice->impl == GemmImpl::kCublas && e.choice->algo > 0)
        je["algo"] = e.choice->algo;
      if (e.us > 0) je["us"] = round3(e.us);
      s += fmt::format("{}\n   {}", j == 0 ? "" : ",", je.dump());
    }
    s += "]}";
  }
  s += "\n ]\n}\n";
  return s;
}

Result<TunedGemmTable> parse_gemm_table(const std::string& text, const std::string& where) {
  FDPP_ASSIGN_OR_RETURN(const json j,
                        parse_json_document({kKind, where}, text, kGemmTableFormat,
                                            kGemmTableVersion, "run fdpp tune again"));

  if (!j.contains("gpu") || !j["gpu"].is_object()) return bad(where, "no \"gpu\" object");
  const json& g = j["gpu"];
  const std::string gwhere = where + " \"gpu\"";
  GpuIdentity gpu;
  int64_t v = 0;
  FDPP_RETURN_IF_ERROR(read_string(g, "name", gwhere, &gpu.name));
  FDPP_RETURN_IF_ERROR(read_int(g, "sm_count", 0, 1 << 20, gwhere, &v));
  gpu.sm_count = static_cast<int>(v);
  FDPP_RETURN_IF_ERROR(read_int(g, "cuda_runtime", 0, 1 << 30, gwhere, &v));
  gpu.cuda_runtime = static_cast<int>(v);
  std::string cc;
  FDPP_RETURN_IF_ERROR(read_string(g, "compute_capability", gwhere, &cc));
  {
    int major = -1, minor = -1;
    char dot = 0, extra = 0;
    std::istringstream in(cc);
    if (!(in >> major >> dot >> minor) || dot != '.' || (in >> extra) || major < 0 || minor < 0)
      return bad(gwhere, fmt::format("\"compute_capability\" = \"{}\" (expected \"9.0\")", cc));
    gpu.cc_major = major;
    gpu.cc_minor = minor;
  }

  std::string dts;
  FDPP_RETURN_IF_ERROR(read_string(j, "dtype", where, &dts));
  DType dtype = DType::kF16;
  if (!parse_dtype(dts, &dtype) || (dtype != DType::kF16 && dtype != DType::kBF16))
    return bad(where, fmt::format("\"dtype\" = \"{}\" (expected f16 or bf16)", dts));

  if (!j.contains("shapes") || !j["shapes"].is_array()) return bad(where, "no \"shapes\" array");
  std::vector<GemmTableShape> shapes;
  for (size_t i = 0; i < j["shapes"].size(); ++i) {
    const json& js = j["shapes"][i];
    const std::string swhere = fmt::format("{} shapes[{}]", where, i);
    if (!js.is_object()) return bad(swhere, "not an object");
    GemmTableShape s;
    if (js.contains("name") && js["name"].is_string()) s.name = js["name"].get<std::string>();
    FDPP_RETURN_IF_ERROR(read_int(js, "n", 1, kMax32, swhere, &s.n));
    FDPP_RETURN_IF_ERROR(read_int(js, "k", 1, kMax32, swhere, &s.k));
    if (!js.contains("entries") || !js["entries"].is_array() || js["entries"].empty())
      return bad(swhere, "no \"entries\" array (or an empty one)");
    int prev = 0;
    for (size_t e = 0; e < js["entries"].size(); ++e) {
      const json& je = js["entries"][e];
      const std::string ewhere = fmt::format("{} entries[{}]", swhere, e);
      if (!je.is_object()) return bad(ewhere, "not an object");
      GemmTableEntry entry;
      FDPP_RETURN_IF_ERROR(read_int(je, "m", 1, kMaxGemmTableM, ewhere, &v));
      entry.m = static_cast<int>(v);
      if (entry.m <= prev) return bad(ewhere, fmt::format("M = {} after M = {} (M must ascend)", entry.m, prev));
      prev = entry.m;
      std::string impl, config;
      FDPP_RETURN_IF_ERROR(read_string(je, "impl", ewhere, &impl));
      if (impl == "flat") FDPP_RETURN_IF_ERROR(read_string(je, "config", ewhere, &config));
      int64_t splits = 0, algo = 0;
      if (je.contains("splits")) FDPP_RETURN_IF_ERROR(read_int(je, "splits", 0, kMaxSplitK, ewhere, &splits));
      if (je.contains("algo")) FDPP_RETURN_IF_ERROR(read_int(je, "algo", 0, kMaxCublasAlgo, ewhere, &algo));
      FDPP_ASSIGN_OR_RETURN(entry.choice, choice_from_names(impl, config, splits, algo, ewhere));
      if (je.contains("us") && je["us"].is_number()) entry.us = je["us"].get<double>();
      s.entries.push_back(entry);
    }
    shapes.push_back(std::move(s));
  }
  auto t = TunedGemmTable::create(gpu, dtype, std::move(shapes));
  if (!t.ok()) return bad(where, t.status().message());
  if (j.contains("created") && j["created"].is_string()) t->created = j["created"].get<std::string>();
  if (j.contains("models") && j["models"].is_array())
    for (const json& m : j["models"])
      if (m.is_string()) t->models.push_back(m.get<std::string>());
  return t;
}

Result<TunedGemmTable> load_gemm_table(const fs::path& path) {
  auto text = read_regular_file(path);
  if (text.status().code() == StatusCode::kNotFound)
    return NotFound(fmt::format("no GEMM table at {}", path.string()));
  if (!text.ok()) return text.status();
  return parse_gemm_table(*text, path.string());
}

Status save_gemm_table(const TunedGemmTable& table, const fs::path& path) {
  return write_file_atomically(path, serialize_gemm_table(table));
}

Status check_gemm_table_matches(const TunedGemmTable& table, const GpuIdentity& gpu, DType dtype) {
  if (!(table.gpu() == gpu))
    return InvalidArgument(fmt::format("the GEMM table was measured on {}, not on this {}",
                                       table.gpu().summary(), gpu.summary()));
  if (table.dtype() != dtype)
    return InvalidArgument(fmt::format("the GEMM table is for {}, this engine runs {}",
                                       dtype_name(table.dtype()), dtype_name(dtype)));
  return Status::Ok();
}

// ---- built-in defaults ----------------------------------------------------------------

Result<TunedGemmTable> builtin_gemm_table(DType dtype) {
  const BuiltinGemmTable& b = builtin_gemm_table_data();
  std::vector<GemmTableShape> shapes;
  for (int i = 0; i < b.row_count; ++i) {
    const BuiltinGemmRow& r = b.rows[i];
    const std::string where = fmt::format("built-in row {} ({} M={})", i, r.shape, r.m);
    auto it = std::find_if(shapes.begin(), shapes.end(),
                           [&](const GemmTableShape& s) { return s.n == r.n && s.k == r.k; });
    if (it == shapes.end()) {
      shapes.push_back(GemmTableShape{r.shape, r.n, r.k, {}});
      it = std::prev(shapes.end());
    }
    FDPP_ASSIGN_OR_RETURN(std::optional<ImplChoice> c,
                          choice_from_names(r.impl, r.config, r.splits, r.algo, where));
    it->entries.push_back({r.m, c, r.us});
  }
  GpuIdentity gpu{b.gpu_name, b.sm_count, b.cc_major, b.cc_minor, b.cuda_runtime};
  FDPP_ASSIGN_OR_RETURN(TunedGemmTable t, TunedGemmTable::create(gpu, dtype, std::move(shapes)));
  t.created = b.created;
  return t;
}

}  // namespace fdpp
