// The engine's GEMM dispatch table (tuning/gemm_table_setup.h).
#include "tuning/gemm_table_setup.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dispatch/gemm_policy.h"
#include "dispatch/gemm_table.h"
#include "tuning/gemm_table_derive.h"
#include "tuning/gemm_table_files.h"
#include "tuning/gemm_tune.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

// The model's shapes the table has no entry for, "qkv [12288, 4096]" each.
std::vector<GemmTimingShape> missing_shapes(const std::optional<TunedGemmTable>& t,
                                            const std::vector<GemmTimingShape>& shapes) {
  std::vector<GemmTimingShape> out;
  for (const GemmTimingShape& s : shapes)
    if (!t || t->find(s.n, s.k) == nullptr) out.push_back(s);
  return out;
}

std::string shape_list(const std::vector<GemmTimingShape>& shapes) {
  std::string s;
  for (const GemmTimingShape& x : shapes)
    s += fmt::format("{}{} [{}, {}]", s.empty() ? "" : ", ", x.name, x.n, x.k);
  return s;
}

}  // namespace

Result<TunedGemmTable> settle_gemm_step_ties(const GemmTableTune& tune,
                                             const GemmStepTimer& time_step, int rounds) {
  TunedGemmTable table = tune.table;
  for (const GemmStepTie& tie : tune.ties) {
    std::vector<TunedGemmTable> variants;
    for (const GemmTimedChoice& c : tie.options) {
      FDPP_ASSIGN_OR_RETURN(TunedGemmTable v,
                            with_gemm_choice(table, tie.n, tie.k, tie.m, c.choice, c.us));
      variants.push_back(std::move(v));
    }
    std::vector<double> best(variants.size(), std::numeric_limits<double>::infinity());
    for (int round = 0; round < std::max(1, rounds); ++round)
      for (size_t i = 0; i < variants.size(); ++i) {
        FDPP_ASSIGN_OR_RETURN(const double ms, time_step(variants[i]));
        best[i] = std::min(best[i], ms);
      }
    const size_t win = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
    std::string timed;
    for (size_t i = 0; i < variants.size(); ++i)
      timed += fmt::format("{}{} {:.1f} µs alone, {:.3f} ms per step", i ? "; " : "",
                           impl_choice_name(tie.options[i].choice), tie.options[i].us, best[i]);
    spdlog::info("--autotune: {} [{}, {}] at M {} is a near tie alone ({}): {} by the decode step",
                 tie.shape, tie.n, tie.k, tie.m, timed, impl_choice_name(tie.options[win].choice));
    table = std::move(variants[win]);
  }
  return table;
}

Status install_gemm_table(Backend& backend, TunedGemmTable table) {
  return backend.set_gemm_table(std::make_shared<const TunedGemmTable>(std::move(table)));
}

Result<std::string> setup_gemm_table(const EngineOptions& o, const ModelConfig& cfg,
                                     Backend& backend, GemmTableTune* tune) {
  GemmPolicy policy = GemmPolicy::kAuto;
  if (!parse_gemm_policy(o.gemm, &policy))
    return InvalidArgument(fmt::format("--gemm {}: expected auto, gemv, flat or cublas", o.gemm));
  if (backend.device() != Device::kCUDA) {
    if (!o.gemm_table.empty() || o.autotune)
      spdlog::warn("--gemm-table / --autotune apply to the CUDA backend only: ignored");
    return std::string("none (CPU backend)");
  }
  if (policy == GemmPolicy::kGemv || policy == GemmPolicy::kCublas) {
    if (!o.gemm_table.empty() || o.autotune)
      spdlog::warn("--gemm {} forces one implementation: --gemm-table / --autotune are ignored",
                   o.gemm);
    return fmt::format("none (--gemm {})", o.gemm);
  }
  FDPP_ASSIGN_OR_RETURN(GpuIdentity gpu, backend.gpu_identity());
  const DType dtype = backend.activation_dtype();
  const std::vector<GemmTimingShape> model_shapes = model_gemm_tune_shapes(cfg);

  // 1. Named on the command line: its problems are errors.
  if (!o.gemm_table.empty()) {
    const std::string where = "--gemm-table " + o.gemm_table.string();
    auto t = load_gemm_table(o.gemm_table);
    if (!t.ok()) return t.status().with_context(where);
    FDPP_RETURN_IF_ERROR(check_gemm_table_matches(*t, gpu, dtype).with_context(where));
    if (auto miss = missing_shapes(*t, model_shapes); !miss.empty())
      spdlog::warn("{} has no entry for {}: the built-in rule serves them", o.gemm_table.string(),
                   shape_list(miss));
    FDPP_RETURN_IF_ERROR(install_gemm_table(backend, std::move(t).value()));
    return "file " + o.gemm_table.string();
  }

  // 2. This GPU's cache file.
  const fs::path path = gemm_table_path(gpu, dtype);
  std::optional<TunedGemmTable> table;
  if (auto t = load_gemm_table(path); t.ok()) {
    if (Status s = check_gemm_table_matches(*t, gpu, dtype); s.ok())
      table = std::move(t).value();
    else
      spdlog::warn("ignoring {}: {}; using built-in GEMM defaults", path.string(), s.message());
  } else if (t.status().code() != StatusCode::kNotFound) {
    spdlog::warn("ignoring {}: {}; using built-in GEMM defaults", path.string(), t.status().message());
  }
  const bool cache_was_bad = !table && fs::exists(path);
  std::vector<GemmTimingShape> missing = missing_shapes(table, model_shapes);

  if (o.autotune && !missing.empty()) {
    spdlog::info("--autotune: timing GEMM shapes {} on {} (seconds)", shape_list(missing),
                 gpu.summary());
    GemmTuneOptions to;
    std::vector<GemmTiming> timings;
    auto fresh = tune_gemm_table(backend, missing, to, {}, &timings);
    if (!fresh.ok()) return fresh.status().with_context("--autotune");
    fresh->models = {o.model_dir.string()};
    table = table ? merge_gemm_tables(*table, *fresh) : std::move(fresh).value();
    const Status saved = save_gemm_table(*table, path);
    if (!saved.ok())
      spdlog::warn("--autotune: the table is used but not saved: {}", saved.message());
    else
      spdlog::info("--autotune: saved {}", path.string());
    if (tune != nullptr) {
      tune->table = *table;
      tune->path = saved.ok() ? path.string() : std::string();
      // Under --gemm flat the table's M = 1 entry does not choose the implementation.
      if (policy == GemmPolicy::kAuto) tune->ties = gemm_step_ties(timings, 1);
    }
    missing.clear();
  }
  if (table) {
    if (!missing.empty())
      spdlog::info("{} has no entry for {}: the built-in rule serves them (fdpp tune -m {})",
                   path.string(), shape_list(missing), o.model_dir.string());
    FDPP_RETURN_IF_ERROR(install_gemm_table(backend, std::move(*table)));
    return "file " + path.string();
  }

  // 3. The built-in defaults.
  auto builtin = builtin_gemm_table(dtype);
  if (!builtin.ok()) {
    spdlog::warn("the built-in GEMM table does not load ({}): using the built-in rule",
                 builtin.status().message());
    return std::string("none (built-in rule)");
  }
  if (!cache_was_bad)
    spdlog::info("no tuned GEMM table for {}; using built-in defaults (run fdpp tune)", gpu.summary());
  const std::string what = fmt::format("built-in defaults ({}, {})", builtin->gpu().name, builtin->created);
  FDPP_RETURN_IF_ERROR(install_gemm_table(backend, std::move(builtin).value()));
  return what;
}

}  // namespace fdpp
