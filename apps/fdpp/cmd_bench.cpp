// fdpp bench: llama-bench-style prefill and decode timings, each decode figure
// set against the roofline computed from this GPU's streaming-read bandwidth,
// measured first in the same run.
#include <cstdio>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gemm_cli.h"
#include "softmax_cli.h"
#include "fdpp/bench.h"
#include "fdpp/engine.h"
#include "fdpp/model_info.h"

namespace fdpp::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string batches = "1,8";
  std::string prompts = "128,1024";
  bool prompts_given = false;  // -p on the command line: its lengths are refused, not dropped
  int n_gen = 128;
  int reps = 3;
  std::string device = "auto";
  std::string dtype;
  GemmCliOptions gemm;
  SoftmaxCliOptions softmax;
  std::string output = "md";
  bool no_graphs = false;
};

int run_bench(const BenchOptions& o) {
  auto bs = parse_id_list(o.batches);
  auto ps = parse_id_list(o.prompts);
  if (!bs.ok()) return fail(bs.status());
  if (!ps.ok()) return fail(ps.status());
  for (int v : *bs)
    if (v < 1) return fail("batch sizes must be positive");
  for (int v : *ps)
    if (v < 1) return fail("prompt lengths must be positive");
  if (o.n_gen < 2 || o.reps < 1) return fail("-n must be at least 2 and -r at least 1");
  // A prompt and its -n tokens must fit the model's positions: past them a run measures a
  // context the model was not trained for (and, with learned positions, cannot run at all).
  auto info = read_model_info(o.model);
  if (!info.ok()) return fail(info.status());
  const int64_t positions = info->model.max_position_embeddings;
  std::vector<int> prompts;
  for (int p : *ps) {
    if (int64_t{p} + o.n_gen <= positions) {
      prompts.push_back(p);
    } else if (o.prompts_given) {
      return fail(fmt::format("-p {} with -n {} needs {} positions but {} has {} "
                              "(max_position_embeddings); give shorter -p lengths or a smaller -n",
                              p, o.n_gen, int64_t{p} + o.n_gen, o.model, positions));
    }
  }
  if (prompts.empty()) {
    if (positions - o.n_gen < 1)
      return fail(fmt::format("-n {} leaves no room for a prompt in the {} positions of {}",
                              o.n_gen, positions, o.model));
    prompts.push_back(static_cast<int>(positions - o.n_gen));
  }

  ModelBenchOptions bo;
  EngineOptions& eo = bo.engine;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  apply_gemm_options(o.gemm, &eo);
  apply_softmax_options(o.softmax, &eo);
  eo.cuda_graphs = !o.no_graphs;
  bo.batches = *bs;
  bo.prompts = prompts;
  bo.n_gen = o.n_gen;
  bo.reps = o.reps;
  auto report = bench_model(bo, [](const ModelBenchRow& r) {
    std::fprintf(stderr, "bench: b %d p %d done\n", r.batch, r.prompt);
  });
  if (!report.ok()) return fail(report.status());
  // After the run, so that a failing run's stderr stays its one error line.
  if (prompts.size() != ps->size())
    std::fprintf(stderr, "bench: default prompt lengths past %lld positions - %d generated were "
                 "left out\n", static_cast<long long>(positions), o.n_gen);
  const std::vector<ModelBenchRow>& rows = report->rows;
  const double read_gbs = report->bandwidth ? report->bandwidth->gbs : 0;

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  if (o.output == "json") {
    nlohmann::json meta;
    if (report->gpu) {
      meta["gpu"] = report->gpu->name;
      meta["sm_count"] = report->gpu->sm_count;
      meta["compute_capability"] = fmt::format("{}.{}", report->gpu->cc_major, report->gpu->cc_minor);
      meta["cuda_runtime"] = report->gpu->runtime_version;
      meta["datasheet_bandwidth_gbs"] = report->gpu->peak_bandwidth_gbs;
    }
    if (report->bandwidth) {
      meta["read_bandwidth_gbs"] = report->bandwidth->gbs;
      meta["read_bandwidth_best_gbs"] = report->bandwidth->best_gbs;
    }
    meta["model"] = o.model;
    meta["date"] = date;
    meta["dtype"] = report->dtype;
    meta["device"] = eo.device;
    meta["cuda_graphs"] = !o.no_graphs;
    meta["gemm"] = o.gemm.gemm;
    meta["pdl"] = report->pdl;
    meta["fuse"] = o.gemm.fuse == "on";
    meta["gemm_table"] = report->gemm_table;
    meta["softmax"] = o.softmax.softmax;
    meta["phi"] = o.softmax.phi;
    meta["weight_bytes_per_step"] = report->weight_bytes_per_step;
    nlohmann::json jr = nlohmann::json::array();
    for (const ModelBenchRow& r : rows)
      jr.push_back({{"batch", r.batch}, {"prompt", r.prompt}, {"gen", r.gen},
                    {"prefill_ms", r.prefill_ms.mean}, {"prefill_ms_std", r.prefill_ms.std},
                    {"prefill_tokens_per_s", r.prefill_tps},
                    {"decode_ms_per_step", r.decode_ms_per_step.mean},
                    {"decode_ms_per_step_std", r.decode_ms_per_step.std},
                    {"decode_tokens_per_s", r.decode_tps}, {"step_bytes", r.step_bytes},
                    {"achieved_gbs", r.gbs}, {"roofline_pct", r.roofline_pct},
                    {"roofline_tokens_per_s", r.roofline_tps},
                    {"softmax", softmax_json(r.softmax)}});
    meta["results"] = jr;
    std::puts(meta.dump(1).c_str());
    return 0;
  }
  fmt::print("fdpp bench | {} | {} {} | {} | {} | --gemm {} | pdl {} | fuse {}\n", o.model,
             report->model_type, report->dtype, report->gpu ? report->gpu->summary : "cpu", date,
             o.gemm.gemm, report->pdl ? "on" : "off", o.gemm.fuse);
  fmt::print("GEMM table: {}\n", report->gemm_table);
  if (read_gbs > 0) fmt::print("measured streaming read bandwidth: {:.0f} GB/s\n\n", read_gbs);
  fmt::print("| b | p | n | prefill ms | prefill tok/s | decode ms/step | decode tok/s | GB/s | % roofline | roofline tok/s |\n");
  fmt::print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const ModelBenchRow& r : rows)
    fmt::print("| {} | {} | {} | {:.2f} ± {:.2f} | {:.0f} | {:.3f} ± {:.3f} | {:.1f} | {:.0f} | {} | {} |\n", r.batch,
               r.prompt, r.gen, r.prefill_ms.mean, r.prefill_ms.std, r.prefill_tps, r.decode_ms_per_step.mean,
               r.decode_ms_per_step.std, r.decode_tps, r.gbs,
               read_gbs > 0 ? fmt::format("{:.1f}%", r.roofline_pct) : "-",
               read_gbs > 0 ? fmt::format("{:.0f}", r.roofline_tps) : "-");
  if (!rows.empty() && (rows[0].softmax.prefill != "sync" || rows[0].softmax.decode != "sync")) {
    fmt::print("\n");
    for (const ModelBenchRow& r : rows) fmt::print("b {} p {}: {}\n", r.batch, r.prompt, softmax_summary(r.softmax));
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "prefill and decode speed against the bandwidth roofline");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder")->required();
  sub->add_option("-b,--batch", o->batches, "batch sizes")->capture_default_str();
  sub->add_option("-p,--prompt", o->prompts, "prompt lengths (each plus -n within the model's positions)")
      ->capture_default_str()
      ->each([o](const std::string&) { o->prompts_given = true; });
  sub->add_option("-n,--n-gen", o->n_gen, "tokens generated per sequence")->capture_default_str();
  sub->add_option("-r,--reps", o->reps, "timed repetitions (after one warm-up)")->capture_default_str();
  sub->add_option("--device", o->device, "cpu, cuda or auto")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sub->add_option("--dtype", o->dtype, "fp16 or bf16 on CUDA");
  add_gemm_options(sub, o->gemm);
  sub->add_option("-o,--output", o->output, "md or json")->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  sub->add_flag("--no-graphs", o->no_graphs, "decode eagerly instead of replaying CUDA graphs");
  add_softmax_options(sub, o->softmax);
  sub->callback([o, &exit_code] { exit_code = run_bench(*o); });
}

}  // namespace fdpp::cli
