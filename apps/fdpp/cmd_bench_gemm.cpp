// fdpp bench-gemm: ImplA (CUDA-core GEMV), every ImplB configuration (tensor-core
// flat GEMM) and ImplC (cuBLASLt) timed on a model's linear-layer shapes over a
// sweep of M, each beside the streaming-read bandwidth measured first in the
// same run. Markdown for people, JSON (every measurement) for the tuner and
// scripts/plot_gemm.py.
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
#include "model/config.h"
#include "model/gemm_shapes.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/gemm_bench.h"
#include "backend/cuda/bench/read_bandwidth.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#include "dispatch/gemm_plan.h"
#endif

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

#ifdef FDPP_HAVE_CUDA

// The built-in shape sets: Llama-2's published configurations.
Result<ModelConfig> builtin_config(const std::string& name) {
  ModelConfig c;
  c.model_type = "llama";
  c.head_dim = 128;
  c.vocab_size = 32000;
  if (name == "llama-2-7b") {
    c.hidden_size = 4096, c.intermediate_size = 11008, c.num_layers = 32, c.num_heads = 32;
  } else if (name == "llama-2-13b") {
    c.hidden_size = 5120, c.intermediate_size = 13824, c.num_layers = 40, c.num_heads = 40;
  } else {
    return InvalidArgument("--shapes " + name + ": built-in sets are llama-2-7b and llama-2-13b");
  }
  c.num_kv_heads = c.num_heads;
  return c;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string config_name(const ImplChoice& c) {
  return c.impl == GemmImpl::kFlat ? kFlatConfigs[c.config].name : gemm_impl_name(c.impl);
}

int run_bench_gemm(const BenchGemmOptions& o) {
  // ---- what to measure ----
  std::vector<std::pair<std::string, ModelConfig>> sets;
  if (!o.model.empty()) {
    auto c = load_model_config(o.model);
    if (!c.ok()) return fail(c.status());
    sets.emplace_back(o.model, *c);
  } else {
    for (const std::string& name : split_list(o.shapes)) {
      auto c = builtin_config(name);
      if (!c.ok()) return fail(c.status());
      sets.emplace_back(name, *c);
    }
  }
  cuda::GemmBenchOptions bo;
  for (const auto& [set, cfg] : sets)
    for (const GemmShape& s : gemm_shapes(cfg)) bo.shapes.push_back({set + ":" + s.name, s.n, s.k});
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
  DType dtype;
  if (!parse_dtype(o.dtype, &dtype) || (dtype != DType::kF16 && dtype != DType::kBF16))
    return fail("--dtype " + o.dtype + ": fp16 or bf16");
  if (!cuda::cuda_device_available()) return fail("bench-gemm needs a CUDA device");

  // ---- the ceiling, measured before anything else takes memory ----
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return fail("cannot create a CUDA stream");
  auto bw = cuda::measure_read_bandwidth(stream);
  cudaStreamDestroy(stream);
  if (!bw.ok()) return fail(bw.status());
  auto info = cuda::query_device_info(0);
  if (!info.ok()) return fail(info.status());

  cuda::CudaBackendOptions co;
  co.activation_dtype = dtype;
  co.pdl = o.pdl == "on";
  auto be = cuda::make_cuda_backend(co);
  if (!be.ok()) return fail(be.status());
  auto results = cuda::run_gemm_bench(**be, bo, [](const cuda::GemmMeasurement& r) {
    std::fprintf(stderr, "bench-gemm: %s M=%d %s: %.2f us\n", r.shape.c_str(), r.m,
                 impl_choice_name(r.choice).c_str(), r.us);
  });
  if (!results.ok()) return fail(results.status());

  // cuBLASLt per (shape, M), for the speedups.
  std::map<std::pair<std::string, int>, double> cublas_us;
  for (const auto& r : *results)
    // The "× cuBLASLt" reference is the library's own pick (its heuristic's first answer).
    if (r.choice.impl == GemmImpl::kCublas && r.choice.algo == 0) cublas_us[{r.shape, r.m}] = r.us;

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));

  {
    nlohmann::json j;
    j["gpu"] = info->name;
    j["device"] = info->summary();
    j["sm_count"] = info->sm_count;
    j["compute_capability"] = fmt::format("{}.{}", info->cc_major, info->cc_minor);
    j["cuda_runtime"] = info->runtime_version;
    j["date"] = date;
    j["dtype"] = dtype_name(dtype);
    j["read_bandwidth_gbs"] = bw->gbs;
    j["read_bandwidth_best_gbs"] = bw->best_gbs;
    j["method"] = "median per-call time in a CUDA graph of back-to-back calls rotating through "
                  "weight copies spanning >= 512 MB (L2 cannot serve repeats); random data";
    nlohmann::json cfgs = nlohmann::json::array();
    for (int i = 0; i < kFlatConfigCount; ++i) {
      const FlatConfigDesc& c = kFlatConfigs[i];
      cfgs.push_back({{"id", i}, {"name", c.name}, {"block_n", c.block_n}, {"block_k", c.block_k},
                      {"warps_n", c.warps_n}, {"warps_k", c.warps_k}, {"stages", c.stages},
                      {"max_m", c.max_m()}, {"smem_bytes", c.smem_bytes()}});
    }
    j["flat_configs"] = cfgs;
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : *results) {
      nlohmann::json e = {{"shape", r.shape}, {"n", r.n}, {"k", r.k}, {"m", r.m},
                          {"impl", gemm_impl_name(r.choice.impl)}, {"config", r.choice.config},
                          {"config_name", config_name(r.choice)}, {"splits", r.choice.splits},
                          {"algo", r.choice.algo},
                          {"planned", r.planned},
                          {"us", r.us}, {"us_min", r.us_min}, {"bytes", r.bytes},
                          {"gbs", r.gbs()}, {"tflops", r.tflops()},
                          {"pct_read_bw", 100.0 * r.gbs() / bw->gbs}};
      if (auto it = cublas_us.find({r.shape, r.m}); it != cublas_us.end())
        e["speedup_vs_cublas"] = it->second / r.us;
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
  fmt::print("fdpp bench-gemm | {} | {} | {}\n", info->summary(), dtype_name(dtype), date);
  fmt::print("measured streaming read bandwidth: {:.0f} GB/s (best {:.0f}); times are µs per call, "
             "median over {} graph replays, L2 defeated by rotating weight copies\n",
             bw->gbs, bw->best_gbs, o.reps);
  std::vector<std::string> columns;  // implementation columns, in run order
  for (const auto& r : *results)
    if (std::find(columns.begin(), columns.end(), config_name(r.choice)) == columns.end())
      columns.push_back(config_name(r.choice));
  std::vector<std::string> shape_order;
  for (const auto& r : *results)
    if (std::find(shape_order.begin(), shape_order.end(), r.shape) == shape_order.end())
      shape_order.push_back(r.shape);
  for (const std::string& shape : shape_order) {
    int64_t n = 0, k = 0;
    std::map<int, std::vector<const cuda::GemmMeasurement*>> by_m;
    for (const auto& r : *results)
      if (r.shape == shape) by_m[r.m].push_back(&r), n = r.n, k = r.k;
    fmt::print("\n### {} [N={}, K={}] ({:.1f} MB of weights)\n\n", shape, n, k, 2.0 * n * k / 1e6);
    fmt::print("| M |");
    for (const auto& c : columns) fmt::print(" {} |", c);
    fmt::print(" best | GB/s | % read BW | TFLOP/s | × cuBLASLt |\n|--:|");
    for (size_t i = 0; i < columns.size(); ++i) fmt::print("--:|");
    fmt::print(":--|--:|--:|--:|--:|\n");
    for (const auto& [m, rs] : by_m) {
      const cuda::GemmMeasurement* best = *std::min_element(
          rs.begin(), rs.end(), [](auto* a, auto* b) { return a->us < b->us; });
      fmt::print("| {} |", m);
      for (const auto& c : columns) {
        const cuda::GemmMeasurement* cell = nullptr;
        for (auto* r : rs)  // the fastest split of this implementation
          if (config_name(r->choice) == c && (cell == nullptr || r->us < cell->us)) cell = r;
        if (cell == nullptr) fmt::print(" - |");
        else if (cell == best) fmt::print(" **{:.2f}** |", cell->us);
        else fmt::print(" {:.2f} |", cell->us);
      }
      const auto it = cublas_us.find({shape, m});
      fmt::print(" {} | {:.0f} | {:.1f}% | {:.1f} | {} |\n", impl_choice_name(best->choice),
                 best->gbs(), 100.0 * best->gbs() / bw->gbs, best->tflops(),
                 it != cublas_us.end() ? fmt::format("{:.2f}", it->second / best->us) : "-");
    }
  }
  return 0;
}

#else

int run_bench_gemm(const BenchGemmOptions&) {
  return fail("bench-gemm needs CUDA: this fdpp was built without it (-DFDPP_CUDA=ON)");
}

#endif

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
