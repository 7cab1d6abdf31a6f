// fdpp bench-gemm: ImplA (CUDA-core GEMV), every ImplB configuration (tensor-core
// flat GEMM) and ImplC (cuBLASLt) timed on a model's linear-layer shapes over a
// sweep of M, each beside the streaming-read bandwidth measured first in the
// same run. Markdown for people, JSON (every measurement) for the tuner and
// scripts/plots/plot_gemm.py.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gemm_cli.h"
#include "fdpp/bench.h"

namespace fdpp::cli {
namespace {

struct BenchGemmOptions {
  std::string model;
  std::string shapes = "llama-2-7b,llama-2-13b";
  std::string ms = "1,2,3,4,5,6,7,8,12,16,24,32,48,64,96,128,256";
  std::string impls = "gemv,flat,cublas";
  std::string splits;  // extra split-K counts to time; empty: the planner's only
  std::string dtype = "fp16";
  int reps = 30;
  std::string output = "md";
  std::string json_out;  // also write the JSON here (markdown on stdout, JSON for the plot)
  std::string pdl = "on";  // the engine's default: each call overlaps the previous one's tail
  int cublas_algos = 1;    // cuBLASLt heuristic answers timed (1: the library's pick only)
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int run_bench_gemm(const BenchGemmOptions& o) {
  if (!built_with_cuda())
    return fail("bench-gemm needs CUDA: this fdpp was built without it (-DFDPP_CUDA=ON)");
  // ---- what to measure ----
  GemmBenchSpec bo;
  auto shapes = gemm_bench_shapes(o.model, split_list(o.shapes));
  if (!shapes.ok()) return fail(shapes.status());
  bo.shapes = *shapes;
  auto ms = parse_id_list(o.ms);
  if (!ms.ok()) return fail(ms.status());
  bo.ms = *ms;
  bo.reps = o.reps;
  if (!o.splits.empty()) {
    auto sp = parse_id_list(o.splits);
    if (!sp.ok()) return fail(sp.status());
    for (int v : *sp)
      if (v < 1) return fail("--splits: counts must be positive");
    bo.splits = *sp;
  }
  bo.cublas_algos = o.cublas_algos;
  bo.gemv = bo.flat = bo.cublas = false;
  for (const std::string& i : split_list(o.impls)) {
    if (i == "gemv") bo.gemv = true;
    else if (i == "flat") bo.flat = true;
    else if (i == "cublas") bo.cublas = true;
    else return fail("--impls " + i + ": expected gemv, flat or cublas");
  }
  bo.dtype = o.dtype;
  bo.pdl = o.pdl == "on";
  auto report = bench_gemm(bo, [](const GemmBenchRecord& r) {
    std::fprintf(stderr, "bench-gemm: %s M=%d %s: %.2f us\n", r.shape.c_str(), r.m,
                 r.choice.c_str(), r.us);
  });
  if (!report.ok()) return fail(report.status());
  const DeviceInfo& info = report->gpu;
  const ReadBandwidth& bw = report->bandwidth;
  const std::vector<GemmBenchRecord>& results = report->records;

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));

  {
    nlohmann::json j;
    j["gpu"] = info.name;
    j["device"] = info.summary;
    j["sm_count"] = info.sm_count;
    j["compute_capability"] = fmt::format("{}.{}", info.cc_major, info.cc_minor);
    j["cuda_runtime"] = info.runtime_version;
    j["date"] = date;
    j["dtype"] = report->dtype;
    j["read_bandwidth_gbs"] = bw.gbs;
    j["read_bandwidth_best_gbs"] = bw.best_gbs;
    j["method"] = "median per-call time in a CUDA graph of back-to-back calls rotating through "
                  "weight copies spanning >= 512 MB (L2 cannot serve repeats); random data";
    nlohmann::json cfgs = nlohmann::json::array();
    for (const FlatConfigInfo& c : report->flat_configs)
      cfgs.push_back({{"id", c.id}, {"name", c.name}, {"block_n", c.block_n}, {"block_k", c.block_k},
                      {"warps_n", c.warps_n}, {"warps_k", c.warps_k}, {"stages", c.stages},
                      {"max_m", c.max_m}, {"smem_bytes", c.smem_bytes}});
    j["flat_configs"] = cfgs;
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json e = {{"shape", r.shape}, {"n", r.n}, {"k", r.k}, {"m", r.m},
                          {"impl", r.impl}, {"config", r.config},
                          {"config_name", r.config_name}, {"splits", r.splits},
                          {"algo", r.algo},
                          {"planned", r.planned},
                          {"us", r.us}, {"us_min", r.us_min}, {"bytes", r.bytes},
                          {"gbs", r.gbs}, {"tflops", r.tflops},
                          {"pct_read_bw", 100.0 * r.gbs / bw.gbs}};
      if (r.cublas_us) e["speedup_vs_cublas"] = *r.cublas_us / r.us;
      rs.push_back(e);
    }
    j["results"] = rs;
    if (!o.json_out.empty()) {
      std::FILE* f = std::fopen(o.json_out.c_str(), "w");
      if (f == nullptr || std::fputs(j.dump(1).c_str(), f) < 0 || std::fclose(f) != 0)
        return fail("cannot write " + o.json_out);
    }
    if (o.output == "json") {
      std::puts(j.dump(1).c_str());
      return 0;
    }
  }

  // ---- markdown: one table per shape, one row per M, the fastest in bold ----
  fmt::print("fdpp bench-gemm | {} | {} | {}\n", info.summary, report->dtype, date);
  fmt::print("measured streaming read bandwidth: {:.0f} GB/s (best {:.0f}); times are µs per call, "
             "median over {} graph replays, L2 defeated by rotating weight copies\n",
             bw.gbs, bw.best_gbs, o.reps);
  std::vector<std::string> columns;  // implementation columns, in run order
  for (const auto& r : results)
    if (std::find(columns.begin(), columns.end(), r.config_name) == columns.end())
      columns.push_back(r.config_name);
  std::vector<std::string> shape_order;
  for (const auto& r : results)
    if (std::find(shape_order.begin(), shape_order.end(), r.shape) == shape_order.end())
      shape_order.push_back(r.shape);
  for (const std::string& shape : shape_order) {
    int64_t n = 0, k = 0;
    std::map<int, std::vector<const GemmBenchRecord*>> by_m;
    for (const auto& r : results)
      if (r.shape == shape) by_m[r.m].push_back(&r), n = r.n, k = r.k;
    fmt::print("\n### {} [N={}, K={}] ({:.1f} MB of weights)\n\n", shape, n, k, 2.0 * n * k / 1e6);
    fmt::print("| M |");
    for (const auto& c : columns) fmt::print(" {} |", c);
    fmt::print(" best | GB/s | % read BW | TFLOP/s | × cuBLASLt |\n|--:|");
    for (size_t i = 0; i < columns.size(); ++i) fmt::print("--:|");
    fmt::print(":--|--:|--:|--:|--:|\n");
    for (const auto& [m, rs] : by_m) {
      const GemmBenchRecord* best = *std::min_element(
          rs.begin(), rs.end(), [](auto* a, auto* b) { return a->us < b->us; });
      fmt::print("| {} |", m);
      for (const auto& c : columns) {
        const GemmBenchRecord* cell = nullptr;
        for (auto* r : rs)  // the fastest split of this implementation
          if (r->config_name == c && (cell == nullptr || r->us < cell->us)) cell = r;
        if (cell == nullptr) fmt::print(" - |");
        else if (cell == best) fmt::print(" **{:.2f}** |", cell->us);
        else fmt::print(" {:.2f} |", cell->us);
      }
      fmt::print(" {} | {:.0f} | {:.1f}% | {:.1f} | {} |\n", best->choice,
                 best->gbs, 100.0 * best->gbs / bw.gbs, best->tflops,
                 best->cublas_us ? fmt::format("{:.2f}", *best->cublas_us / best->us) : "-");
    }
  }
  return 0;
}

}  // namespace

void add_bench_gemm(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchGemmOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench-gemm", "GEMV / flat GEMM / cuBLASLt times on a model's linear shapes, over M");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder: its [N, K] shapes");
  sub->add_option("--shapes", o->shapes, "built-in shape sets when no -m: llama-2-7b,llama-2-13b")
      ->capture_default_str();
  sub->add_option("-M,--m-list", o->ms, "M values (batch sizes)")->capture_default_str();
  sub->add_option("--impls", o->impls, "implementations to time: gemv,flat,cublas")
      ->capture_default_str();
  sub->add_option("--dtype", o->dtype, "fp16 or bf16")->capture_default_str();
  sub->add_option("--splits", o->splits,
                  "also time these split-K counts for gemv/flat (e.g. 1,2,3,4,6,8,12,16)");
  sub->add_option("-r,--reps", o->reps, "timed graph replays per measurement")
      ->capture_default_str();
  sub->add_option("-o,--output", o->output, "md or json")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  add_cublas_algos_option(sub, o->cublas_algos);
  add_pdl_option(sub, o->pdl);
  sub->add_option("--json-out", o->json_out, "also write the JSON (every measurement) to this file");
  sub->callback([o, &exit_code] { exit_code = run_bench_gemm(*o); });
}

}  // namespace fdpp::cli
