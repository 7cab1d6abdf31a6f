// fdpp tune: the GEMM dispatch table of this GPU for a model's linear shapes (design.md,
// Technique 3). Sweeps M over ImplA (GEMV), every ImplB (flat GEMM) configuration and
// cuBLASLt per distinct [N, K], keeps the fastest per M, prints M1 / M2 and the regret
// of the table per shape, and writes the table into the cache the engine reads at start
// (merged with the shapes already there). A second, independent pass measures the
// regret: on the pass it was derived from a table is the best everywhere by
// construction, so only fresh timings show what noise made it pick.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "gemm_cli.h"
#include "model/config.h"
#include "progress_bar.h"
#include "tuning/gemm_table_setup.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/gemm_timing.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "dispatch/gemm_table.h"
#include "tuning/gemm_table_derive.h"
#include "tuning/gemm_table_files.h"
#include "tuning/gemm_tune.h"
#endif

namespace fdpp::cli {
namespace {

struct TuneOptions {
  std::string model;
  std::string dtype;  // empty: the checkpoint's, as the engine picks it
  int max_m = 512;
  int reps = 10;
  std::string out;        // empty: <cache dir>/gemm/<this GPU and dtype>.json
  std::string cache_dir;  // empty: $FDPP_CACHE_DIR, $XDG_CACHE_HOME/fdpp, ~/.cache/fdpp
  std::string emit_cpp;
  std::string json_out;
  bool no_verify = false;
  std::vector<int> splits;  // extra split-K counts timed for ImplA / ImplB
  std::string pdl = "on";   // time the kernels as the engine launches them
  // cuBLASLt heuristic answers timed per (shape, M). 1: the library's pick. Later answers
  // were 1-12% faster in single runs, but no table that kept them held the regret bound on
  // its own verification pass (H200, 2026-11-30, Llama-2-7B, 4 answers: 15.2%, 7.4%;
  // the library's pick: 1.4%), so profiling them is opt-in (docs/techniques.md).
  int cublas_algos = 1;
};

// The regret bound of issue 6: the table may cost at most this over the best choice.
constexpr double kMaxRegret = 0.03;

#ifdef FDPP_HAVE_CUDA

std::string pct(double r) { return fmt::format("{:.1f}%", 100.0 * r); }
std::string regret_cell(const GemmRegret& r) {
  if (r.points == 0) return "-";
  return fmt::format("{} (M {})", pct(r.max), r.worst_m);
}

nlohmann::json regret_json(const GemmRegret& r) {
  return {{"max", r.max}, {"worst_m", r.worst_m}, {"mean", r.mean}, {"points", r.points},
          {"unmeasured", r.unmeasured}};
}

// The two timings behind the worst regret, on both passes: whether the table's choice slowed
// down or its rival sped up (on the H200 cuBLASLt's time on some shapes moves by ~10%
// between passes while the GEMV's stays within 0.5%: docs/benchmarks.md).
void print_regret_point(const TunedGemmTable& table, const GemmShapeReport& worst, DType dtype,
                        const std::vector<GemmTiming>& verify,
                        const std::vector<GemmTiming>& derived_from) {
  const int m = worst.table.worst_m;
  const std::optional<ImplChoice> choice = table.lookup(m, worst.n, worst.k, dtype);
  if (!choice) return;
  const std::optional<GemmRegretPoint> p = gemm_regret_point(verify, worst.n, worst.k, m, *choice);
  if (!p) return;
  const auto first = [&](const ImplChoice& c) {
    const std::optional<double> us = measured_us(derived_from, worst.n, worst.k, m, c);
    return us ? fmt::format("{:.1f}", *us) : std::string("-");
  };
  fmt::print("  there the table's {} took {:.1f} µs and the fastest, {}, {:.1f} µs; on the pass "
             "the table was derived from {} and {} µs\n",
             impl_choice_name(p->choice), p->choice_us, impl_choice_name(p->best), p->best_us,
             first(p->choice), first(p->best));
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError("cannot write " + path);
  f << text;
  f.close();
  if (!f) return IoError("writing " + path + " failed");
  return Status::Ok();
}

int run_tune(const TuneOptions& o) {
  auto cfg = load_model_config(o.model);
  if (!cfg.ok()) return fail(cfg.status());
  DType dtype = cfg->torch_dtype == DType::kBF16 ? DType::kBF16 : DType::kF16;
  if (!o.dtype.empty() &&
      (!parse_dtype(o.dtype, &dtype) || (dtype != DType::kF16 && dtype != DType::kBF16)))
    return fail("--dtype " + o.dtype + ": fp16 or bf16");
  if (o.max_m < 1 || o.max_m > 65536) return fail("--max-m must be in 1..65536");
  if (o.reps < 1) return fail("--reps must be at least 1");
  if (!cuda::cuda_device_available()) return fail("tune needs a CUDA device");

  cuda::CudaBackendOptions co;
  co.activation_dtype = dtype;
  co.pdl = o.pdl == "on";
  auto be = cuda::make_cuda_backend(co);
  if (!be.ok()) return fail(be.status());
  auto info = cuda::query_device_info((*be)->device_ordinal());
  if (!info.ok()) return fail(info.status());
  const GpuIdentity gpu = cuda::gpu_identity(*info);

  const std::vector<GemmTimingShape> shapes = model_gemm_tune_shapes(*cfg);
  GemmTuneOptions to;
  to.max_m = o.max_m;
  to.reps = o.reps;
  for (int v : o.splits)
    if (v < 1) return fail("--splits: counts must be positive");
  to.splits = o.splits;
  to.cublas_algos = o.cublas_algos;
  const std::vector<int> ms = tune_ms(o.max_m);
  const int passes = o.no_verify ? 1 : 2;

  // ---- measure ----
  std::vector<GemmTiming> derived_from, verify;
  Result<TunedGemmTable> table = InvalidArgument("not tuned");
  {
    ProgressBar bar(fmt::format("tune {} ({} shapes, M 1..{}{})", info->name, shapes.size(),
                                ms.back(), passes == 2 ? ", 2 passes" : ""),
                    gemm_tune_measurements(shapes.size(), ms, o.splits.size(), o.cublas_algos,
                                           to.gemv_splits.size()) *
                        passes);
    const auto progress = [&](const GemmTiming& r) {
      bar.step(fmt::format("{} M={} {}", r.shape, r.m, impl_choice_name(r.choice)));
    };
    table = tune_gemm_table(**be, shapes, to, progress, &derived_from);
    if (!table.ok()) return fail(table.status());
    if (passes == 2) {
      auto v = measure_gemm_timings(**be, shapes, to, progress);
      if (!v.ok()) return fail(v.status());
      verify = std::move(v).value();
    }
    bar.finish();
  }
  table->models = {o.model};

  // ---- report ----
  const std::vector<GemmTiming>& check = passes == 2 ? verify : derived_from;
  const std::vector<GemmShapeReport> reports = report_gemm_table(*table, check);
  const GemmDeviceTraits& traits = (*be)->gemm_dispatcher().traits();
  std::vector<GemmRegret> builtin;
  for (const GemmShapeReport& r : reports)
    builtin.push_back(gemm_regret(check, r.n, r.k, [&](int m) -> std::optional<ImplChoice> {
      return default_gemm_choice({m, r.n, r.k, dtype, true}, traits);
    }));

  fmt::print("fdpp tune | {} | {} | {} | {} | M 1..{} ({} values) | {} replays, median\n",
             o.model, info->summary(), dtype_name(dtype), table->created, ms.back(), ms.size(),
             o.reps);
  fmt::print("regret = time of the choice / time of the best measured choice - 1, {}\n",
             passes == 2 ? "on a second, independent pass"
                         : "on the same pass (0 for the table by construction: --no-verify)");
  fmt::print("at M <= {} a shape with a norm or SiLU-gate prologue is timed as the engine runs it: "
             "the GEMV with the prologue fused, the others after its kernel\n\n",
             cuda::kMaxFusedPrologueM);
  fmt::print("| shape | N | K | M1 | M2 | table regret | M1/M2-only regret | built-in rule regret |\n");
  fmt::print("|:--|--:|--:|--:|--:|--:|--:|--:|\n");
  const GemmShapeReport* worst = nullptr;
  for (size_t i = 0; i < reports.size(); ++i) {
    const GemmShapeReport& r = reports[i];
    fmt::print("| {} | {} | {} | {} | {}{} | {} | {} | {} |\n", r.name, r.n, r.k, r.thresholds.m1,
               r.thresholds.m2, r.thresholds.monotone ? "" : " (non-monotone)",
               regret_cell(r.table), regret_cell(r.two_point), regret_cell(builtin[i]));
    if (worst == nullptr || r.table.max > worst->table.max) worst = &r;
  }
  const bool within = worst == nullptr || worst->table.max <= kMaxRegret;
  if (worst != nullptr)
    fmt::print("\nworst table regret: {} ({}, M = {}): {} the {} bound\n", pct(worst->table.max),
               worst->name, worst->table.worst_m, within ? "within" : "ABOVE", pct(kMaxRegret));
  if (passes == 2 && worst != nullptr && worst->table.max > 0)
    print_regret_point(*table, *worst, dtype, verify, derived_from);
  if (!within)
    spdlog::warn("the table's regret exceeds {} (timing noise? try --reps 30)", pct(kMaxRegret));
  // Near ties alone at batch 1 (tuning/gemm_table_derive.h: kStepTieMargin): the decode step can
  // order them differently from the alone-timing, which this tune cannot see.
  const std::vector<GemmStepTie> ties = gemm_step_ties(derived_from, 1);
  if (!ties.empty()) {
    fmt::print("\nnear ties alone at M = 1 (within {}): the decode step may order them otherwise; "
               "an engine started with --autotune and no table for the model settles such ties "
               "by timing decode steps\n", pct(kStepTieMargin));
    for (const GemmStepTie& t : ties) {
      std::string timed;
      for (const GemmTimedChoice& c : t.options)
        timed += fmt::format("{}{} {:.1f} µs", timed.empty() ? "" : ", ", impl_choice_name(c.choice),
                             c.us);
      const std::optional<ImplChoice> has = table->lookup(1, t.n, t.k, dtype);
      fmt::print("  {} [{}, {}]: {}; the table has {}\n", t.shape, t.n, t.k, timed,
                 has ? impl_choice_name(*has) : std::string("the built-in rule"));
    }
  }

  // ---- write: the cache file (merged with the shapes it holds), then the extras ----
  const std::filesystem::path path =
      !o.out.empty() ? std::filesystem::path(o.out) : gemm_table_path(gpu, dtype, o.cache_dir);
  TunedGemmTable merged = *table;
  if (auto old = load_gemm_table(path); old.ok()) {
    if (Status s = check_gemm_table_matches(*old, gpu, dtype); s.ok())
      merged = merge_gemm_tables(*old, *table);
    else
      spdlog::warn("replacing {}: {}", path.string(), s.message());
  } else if (old.status().code() != StatusCode::kNotFound) {
    spdlog::warn("replacing {}: {}", path.string(), old.status().message());
  }
  if (Status s = save_gemm_table(merged, path); !s.ok()) return fail(s);
  fmt::print("table: {} ({} shapes; the engine loads it for {} {})\n", path.string(),
             merged.shapes().size(), gpu.summary(), dtype_name(dtype));

  if (!o.emit_cpp.empty()) {
    const std::string command = fmt::format("fdpp tune -m {} --dtype {} --max-m {} --reps {}",
                                            o.model, dtype_name(dtype), o.max_m, o.reps);
    auto src = emit_builtin_gemm_table_cpp(merged, command);
    if (!src.ok()) return fail(src.status());
    if (Status s = write_text(o.emit_cpp, *src); !s.ok()) return fail(s);
    fmt::print("built-in defaults source: {}\n", o.emit_cpp);
  }

  if (!o.json_out.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["gpu"] = {{"name", gpu.name}, {"sm_count", gpu.sm_count},
                {"compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor)},
                {"cuda_runtime", gpu.cuda_runtime}, {"summary", info->summary()}};
    j["dtype"] = dtype_name(dtype);
    j["date"] = table->created;
    j["reps"] = o.reps;
    j["ms"] = ms;
    j["table_file"] = path.string();
    j["max_regret_bound"] = kMaxRegret;
    j["regret_within_bound"] = within;
    nlohmann::json rs = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      const GemmShapeReport& r = reports[i];
      rs.push_back({{"name", r.name}, {"n", r.n}, {"k", r.k}, {"m1", r.thresholds.m1},
                    {"m2", r.thresholds.m2}, {"monotone", r.thresholds.monotone},
                    {"table_regret", regret_json(r.table)},
                    {"two_point_regret", regret_json(r.two_point)},
                    {"builtin_regret", regret_json(builtin[i])}});
    }
    j["shapes"] = rs;
    nlohmann::json meas = nlohmann::json::array();
    for (int pass = 1; pass <= passes; ++pass)
      for (const GemmTiming& t : pass == 1 ? derived_from : verify)
        meas.push_back({{"pass", pass}, {"shape", t.shape}, {"n", t.n}, {"k", t.k}, {"m", t.m},
                        {"impl", gemm_impl_name(t.choice.impl)},
                        {"config", t.choice.impl == GemmImpl::kFlat
                                       ? kFlatConfigs[t.choice.config].name : ""},
                        {"splits", t.choice.splits}, {"algo", t.choice.algo},
                        {"planned", t.planned}, {"us", t.us}, {"timed_m", t.timed_m}});
    j["measurements"] = meas;
    if (Status s = write_text(o.json_out, j.dump(1)); !s.ok()) return fail(s);
  }
  return 0;
}

#else

int run_tune(const TuneOptions&) {
  return fail("tune needs CUDA: this fdpp was built without it (-DFDPP_CUDA=ON)");
}

#endif

}  // namespace

void add_tune(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* sub = app.add_subcommand(
      "tune", "measure this GPU's GEMM dispatch table (GEMV / flat GEMM / cuBLASLt per M) for a model");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder: its [N, K] shapes")->required();
  sub->add_option("--dtype", o->dtype, "fp16 or bf16 (default: the checkpoint's, as the engine runs it)");
  sub->add_option("--max-m", o->max_m, "largest M swept (dense to 64, then sparse)")->capture_default_str();
  sub->add_option("-r,--reps", o->reps, "timed graph replays per measurement")->capture_default_str();
  sub->add_option("--out", o->out, "table file (default: <cache dir>/gemm/<gpu>_<dtype>.json)");
  sub->add_option("--cache-dir", o->cache_dir,
                  "cache directory (default: $FDPP_CACHE_DIR, $XDG_CACHE_HOME/fdpp, ~/.cache/fdpp)");
  sub->add_option("--emit-cpp", o->emit_cpp,
                  "also write the table as the built-in defaults source (src/dispatch/gemm_table_h200.cpp)");
  add_pdl_option(sub, o->pdl);
  sub->add_option("--json-out", o->json_out, "also write every measurement and the regrets (scripts/plot_tune.py)");
  sub->add_option("--splits", o->splits,
                  "split-K counts to time for GEMV and flat GEMM besides the planner's, e.g. "
                  "1,2,3,4,6,8 (slower sweep; the GEMV always gets 1,2,3,4,6,8)")
      ->delimiter(',');
  add_cublas_algos_option(sub, o->cublas_algos);
  sub->add_flag("--no-verify", o->no_verify,
                "skip the second timing pass that measures the table's regret (half the time)");
  sub->callback([o, &exit_code] { exit_code = run_tune(*o); });
}

}  // namespace fdpp::cli
