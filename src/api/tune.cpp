// fdpp tune's measurement (fdpp/tune.h): the GEMM dispatch table of this GPU for a model's
// linear shapes (design.md, Technique 3), its regret, and the files it is written to. A
// second, independent pass measures the regret: on the pass it was derived from a table is
// the best everywhere by construction, so only fresh timings show what noise made it pick.
#include "fdpp/tune.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "backend/gemm_timing.h"
#include "core/dtype.h"
#include "dispatch/gemm_configs.h"
#include "dispatch/gemm_plan.h"
#include "dispatch/gemm_table.h"
#include "model/config.h"
#include "tuning/gemm_table_derive.h"
#include "tuning/gemm_table_files.h"
#include "tuning/gemm_tune.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/gemm_timing.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#endif

namespace fdpp {

// What the save_tune_* calls need of a tune: the table, both passes' timings and the regrets.
struct GemmTuneState {
  std::string model;
  TunedGemmTable table;  // in TuneTableFile: merged with the file's other shapes
  GpuIdentity gpu;
  DType dtype = DType::kF16;
  int max_m = 0, reps = 0;
  std::vector<int> ms;
  int passes = 1;
  std::vector<GemmTiming> derived_from, verify;
  std::vector<GemmShapeReport> reports;
  std::vector<GemmRegret> builtin;
  std::string device;
  bool within = true;
};

namespace {

// The regret bound of issue 6: the table may cost at most this over the best choice.
constexpr double kMaxRegret = 0.03;

nlohmann::json regret_json(const GemmRegret& r) {
  return {{"max", r.max}, {"worst_m", r.worst_m}, {"mean", r.mean}, {"points", r.points},
          {"unmeasured", r.unmeasured}};
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError("cannot write " + path);
  f << text;
  f.close();
  if (!f) return IoError("writing " + path + " failed");
  return Status::Ok();
}

#ifdef FDPP_HAVE_CUDA

TuneRegret public_regret(const GemmRegret& r) {
  return {r.max, r.worst_m, r.mean, r.points, r.unmeasured};
}

// The worst regret point read on both passes (TuneRegretPoint).
std::optional<TuneRegretPoint> regret_point(const GemmTuneState& s, const GemmShapeReport& worst) {
  const int m = worst.table.worst_m;
  const std::optional<ImplChoice> choice = s.table.lookup(m, worst.n, worst.k, s.dtype);
  if (!choice) return std::nullopt;
  const std::optional<GemmRegretPoint> p =
      gemm_regret_point(s.verify, worst.n, worst.k, m, *choice);
  if (!p) return std::nullopt;
  TuneRegretPoint r;
  r.choice = impl_choice_name(p->choice);
  r.best = impl_choice_name(p->best);
  r.choice_us = p->choice_us;
  r.best_us = p->best_us;
  r.choice_first_us = measured_us(s.derived_from, worst.n, worst.k, m, p->choice);
  r.best_first_us = measured_us(s.derived_from, worst.n, worst.k, m, p->best);
  return r;
}

#endif

}  // namespace

#ifdef FDPP_HAVE_CUDA

Result<TuneReport> tune_gemm(const TuneOptions& o, const TuneProgress& progress) {
  auto cfg = load_model_config(o.model);
  if (!cfg.ok()) return cfg.status();
  DType dtype = cfg->torch_dtype == DType::kBF16 ? DType::kBF16 : DType::kF16;
  if (!o.dtype.empty() &&
      (!parse_dtype(o.dtype, &dtype) || (dtype != DType::kF16 && dtype != DType::kBF16)))
    return InvalidArgument("--dtype " + o.dtype + ": fp16 or bf16");
  if (o.max_m < 1 || o.max_m > 65536) return InvalidArgument("--max-m must be in 1..65536");
  if (o.reps < 1) return InvalidArgument("--reps must be at least 1");
  if (!cuda::cuda_device_available()) return Unsupported("tune needs a CUDA device");

  cuda::CudaBackendOptions co;
  co.activation_dtype = dtype;
  co.pdl = o.pdl;
  auto be = cuda::make_cuda_backend(co);
  if (!be.ok()) return be.status();
  auto info = cuda::query_device_info((*be)->device_ordinal());
  if (!info.ok()) return info.status();

  auto state = std::make_shared<GemmTuneState>();
  GemmTuneState& s = *state;
  s.model = o.model;
  s.gpu = cuda::gpu_identity(*info);
  s.dtype = dtype;
  s.max_m = o.max_m;
  s.reps = o.reps;
  s.device = info->summary();

  const std::vector<GemmTimingShape> shapes = model_gemm_tune_shapes(*cfg);
  GemmTuneOptions to;
  to.max_m = o.max_m;
  to.reps = o.reps;
  for (int v : o.splits)
    if (v < 1) return InvalidArgument("--splits: counts must be positive");
  to.splits = o.splits;
  to.cublas_algos = o.cublas_algos;
  s.ms = tune_ms(o.max_m);
  s.passes = o.verify ? 2 : 1;

  // ---- measure ----
  if (progress.start)
    progress.start({info->name, static_cast<int>(shapes.size()), s.ms.back(), s.passes,
                    gemm_tune_measurements(shapes.size(), s.ms, o.splits.size(), o.cublas_algos,
                                           to.gemv_splits.size()) *
                        s.passes});
  const auto step = [&](const GemmTiming& r) {
    if (progress.step) progress.step(fmt::format("{} M={} {}", r.shape, r.m, impl_choice_name(r.choice)));
  };
  auto table = tune_gemm_table(**be, shapes, to, step, &s.derived_from);
  if (!table.ok()) return table.status();
  if (s.passes == 2) {
    auto v = measure_gemm_timings(**be, shapes, to, step);
    if (!v.ok()) return v.status();
    s.verify = std::move(v).value();
  }
  if (progress.finish) progress.finish();
  s.table = std::move(table).value();
  s.table.models = {o.model};

  // ---- the regrets: the table's, M1/M2's and the built-in rule's ----
  const std::vector<GemmTiming>& check = s.passes == 2 ? s.verify : s.derived_from;
  s.reports = report_gemm_table(s.table, check);
  const GemmDeviceTraits& traits = (*be)->gemm_dispatcher().traits();
  for (const GemmShapeReport& r : s.reports)
    s.builtin.push_back(gemm_regret(check, r.n, r.k, [&](int m) -> std::optional<ImplChoice> {
      return default_gemm_choice({m, r.n, r.k, dtype, true}, traits);
    }));

  TuneReport report;
  report.device = s.device;
  report.dtype = dtype_name(dtype);
  report.created = s.table.created;
  report.ms = s.ms;
  report.reps = o.reps;
  report.passes = s.passes;
  report.max_fused_prologue_m = static_cast<int>(cuda::kMaxFusedPrologueM);
  report.max_regret = kMaxRegret;
  report.step_tie_margin = kStepTieMargin;
  for (size_t i = 0; i < s.reports.size(); ++i) {
    const GemmShapeReport& r = s.reports[i];
    report.shapes.push_back({r.name, r.n, r.k, r.thresholds.m1, r.thresholds.m2,
                             r.thresholds.monotone, public_regret(r.table),
                             public_regret(r.two_point), public_regret(s.builtin[i])});
    if (report.worst < 0 || r.table.max > s.reports[report.worst].table.max)
      report.worst = static_cast<int>(i);
  }
  const GemmShapeReport* worst = report.worst < 0 ? nullptr : &s.reports[report.worst];
  s.within = worst == nullptr || worst->table.max <= kMaxRegret;
  report.within = s.within;
  if (s.passes == 2 && worst != nullptr && worst->table.max > 0)
    report.worst_point = regret_point(s, *worst);
  for (const GemmStepTie& t : gemm_step_ties(s.derived_from, 1)) {
    TuneStepTie tie{t.shape, t.n, t.k, {}, std::nullopt};
    for (const GemmTimedChoice& c : t.options)
      tie.options.push_back({impl_choice_name(c.choice), c.us});
    if (const std::optional<ImplChoice> has = s.table.lookup(1, t.n, t.k, dtype))
      tie.table_choice = impl_choice_name(*has);
    report.ties.push_back(std::move(tie));
  }
  report.state = std::move(state);
  return report;
}

#else

Result<TuneReport> tune_gemm(const TuneOptions&, const TuneProgress&) {
  return Unsupported("tune needs CUDA: this fdpp was built without it (-DFDPP_CUDA=ON)");
}

#endif

Result<TuneTableFile> save_tune_table(const TuneReport& report, const std::string& out,
                                      const std::string& cache_dir) {
  if (!report.state) return InvalidArgument("save_tune_table: the report holds no tune");
  const GemmTuneState& s = *report.state;
  const std::filesystem::path path = !out.empty() ? std::filesystem::path(out)
                                                  : gemm_table_path(s.gpu, s.dtype, cache_dir);
  auto merged = std::make_shared<GemmTuneState>(s);
  if (auto old = load_gemm_table(path); old.ok()) {
    if (Status st = check_gemm_table_matches(*old, s.gpu, s.dtype); st.ok())
      merged->table = merge_gemm_tables(*old, s.table);
    else
      spdlog::warn("replacing {}: {}", path.string(), st.message());
  } else if (old.status().code() != StatusCode::kNotFound) {
    spdlog::warn("replacing {}: {}", path.string(), old.status().message());
  }
  if (Status st = save_gemm_table(merged->table, path); !st.ok()) return st;
  TuneTableFile file;
  file.path = path.string();
  file.shapes = static_cast<int>(merged->table.shapes().size());
  file.gpu = s.gpu.summary();
  file.merged = std::move(merged);
  return file;
}

Status save_tune_cpp(const TuneTableFile& table, const std::string& command,
                     const std::string& path) {
  if (!table.merged) return InvalidArgument("save_tune_cpp: no table was saved");
  auto src = emit_builtin_gemm_table_cpp(table.merged->table, command);
  if (!src.ok()) return src.status();
  return write_text(path, *src);
}

Status save_tune_json(const TuneReport& report, const TuneTableFile& table,
                      const std::string& path) {
  if (!report.state) return InvalidArgument("save_tune_json: the report holds no tune");
  const GemmTuneState& s = *report.state;
  const GpuIdentity& gpu = s.gpu;
  nlohmann::json j;
  j["model"] = s.model;
  j["gpu"] = {{"name", gpu.name}, {"sm_count", gpu.sm_count},
              {"compute_capability", fmt::format("{}.{}", gpu.cc_major, gpu.cc_minor)},
              {"cuda_runtime", gpu.cuda_runtime}, {"summary", s.device}};
  j["dtype"] = dtype_name(s.dtype);
  j["date"] = s.table.created;
  j["reps"] = s.reps;
  j["ms"] = s.ms;
  j["table_file"] = table.path;
  j["max_regret_bound"] = kMaxRegret;
  j["regret_within_bound"] = s.within;
  nlohmann::json rs = nlohmann::json::array();
  for (size_t i = 0; i < s.reports.size(); ++i) {
    const GemmShapeReport& r = s.reports[i];
    rs.push_back({{"name", r.name}, {"n", r.n}, {"k", r.k}, {"m1", r.thresholds.m1},
                  {"m2", r.thresholds.m2}, {"monotone", r.thresholds.monotone},
                  {"table_regret", regret_json(r.table)},
                  {"two_point_regret", regret_json(r.two_point)},
                  {"builtin_regret", regret_json(s.builtin[i])}});
  }
  j["shapes"] = rs;
  nlohmann::json meas = nlohmann::json::array();
  for (int pass = 1; pass <= s.passes; ++pass)
    for (const GemmTiming& t : pass == 1 ? s.derived_from : s.verify)
      meas.push_back({{"pass", pass}, {"shape", t.shape}, {"n", t.n}, {"k", t.k}, {"m", t.m},
                      {"impl", gemm_impl_name(t.choice.impl)},
                      {"config", t.choice.impl == GemmImpl::kFlat
                                     ? kFlatConfigs[t.choice.config].name : ""},
                      {"splits", t.choice.splits}, {"algo", t.choice.algo},
                      {"planned", t.planned}, {"us", t.us}, {"timed_m", t.timed_m}});
  j["measurements"] = meas;
  return write_text(path, j.dump(1));
}

}  // namespace fdpp
