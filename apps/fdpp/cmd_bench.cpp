// fdpp bench: llama-bench-style prefill and decode timings, each decode figure
// set against the roofline computed from this GPU's streaming-read bandwidth,
// measured first in the same run.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gemm_cli.h"
#include "softmax_cli.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/read_bandwidth.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#endif

namespace fdpp::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string batches = "1,8";
  std::string prompts = "128,1024,8192";
  int n_gen = 128;
  int reps = 3;
  std::string device = "auto";
  std::string dtype;
  GemmCliOptions gemm;
  SoftmaxCliOptions softmax;
  std::string output = "md";
  bool no_graphs = false;
};

struct Stat {
  double mean = 0, std = 0;
};
Stat stat(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0.0;
  return s;
}

struct Row {
  int b = 0, p = 0, n = 0;
  Stat prefill_ms, decode_ms_per_step;
  double prefill_tps = 0, decode_tps = 0;
  double step_bytes = 0, gbs = 0, roofline_pct = 0, roofline_tps = 0;
  SoftmaxStats softmax;  // the timed repetitions' unified-softmax fallbacks
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
  const int max_b = *std::max_element(bs->begin(), bs->end());
  const int max_p = *std::max_element(ps->begin(), ps->end());

  EngineOptions eo;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  apply_gemm_options(o.gemm, &eo);
  apply_softmax_options(o.softmax, &eo);
  eo.max_batch = max_b;
  eo.context = max_p + o.n_gen + 8;  // + the untimed warm-up steps of benchmark_decode
  eo.prefill_chunk = max_p;  // whole prompts in one forward: time to first token as a server would see it
  eo.cuda_graphs = !o.no_graphs;

  nlohmann::json meta;
  double read_gbs = 0;
  std::string gpu = "cpu";
#ifdef FDPP_HAVE_CUDA
  if (eo.device == "cuda") {
    if (!cuda::cuda_device_available())
      return fail("--device cuda: no usable CUDA device (no driver, no GPU, or compute capability "
                  "below 8.0)");
    // Measured before the model takes its memory, on a buffer far larger than the L2.
    cudaStream_t s = nullptr;
    if (cudaStreamCreate(&s) != cudaSuccess) return fail("cannot create a CUDA stream");
    auto bw = cuda::measure_read_bandwidth(s);
    cudaStreamDestroy(s);
    if (!bw.ok()) return fail(bw.status());
    read_gbs = bw->gbs;
    auto info = cuda::query_device_info(0);
    if (info.ok()) {
      gpu = info->summary();
      meta["gpu"] = info->name;
      meta["sm_count"] = info->sm_count;
      meta["compute_capability"] = fmt::format("{}.{}", info->cc_major, info->cc_minor);
      meta["cuda_runtime"] = info->runtime_version;
      meta["datasheet_bandwidth_gbs"] = info->peak_bandwidth_gbs();
    }
    meta["read_bandwidth_gbs"] = bw->gbs;
    meta["read_bandwidth_best_gbs"] = bw->best_gbs;
  }
#endif
  auto engine_or = Engine::create(eo);
  if (!engine_or.ok()) return fail(engine_or.status());
  Engine& engine = **engine_or;
  const ModelConfig& c = engine.config();
  const ModelWeights& w = engine.model().weights();
  const size_t elem = dtype_size(w.plan.dtype);
  // A decode step streams every weight once except the embedding table (only B rows of
  // it), which is also the LM head when tied.
  const double embed_bytes = static_cast<double>(c.vocab_size) * c.hidden_size * elem;
  const double weight_bytes = w.plan.total_bytes - (c.tie_word_embeddings ? 0.0 : embed_bytes);
  const double kv_bytes_per_pos = 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * elem;

  std::vector<Row> rows;
  for (int p : *ps) {
    for (int b : *bs) {
      std::vector<double> prefill, step;
      for (int rep = -1; rep < o.reps; ++rep) {  // rep -1 warms up (cuBLASLt plans, graphs)
        auto pre = engine.benchmark_prefill(b, p, 1000 + rep);
        if (!pre.ok()) return fail(pre.status());
        auto dec = engine.benchmark_decode(b, p, o.n_gen, 2000 + rep);
        if (!dec.ok()) return fail(dec.status());
        if (rep < 0) {
          if (Status st = engine.reset_softmax_stats(); !st.ok()) return fail(st);
          continue;
        }
        prefill.push_back(*pre);
        step.push_back(std::accumulate(dec->begin(), dec->end(), 0.0) / dec->size());
      }
      Row r;
      r.b = b;
      r.p = p;
      r.n = o.n_gen;
      r.prefill_ms = stat(prefill);
      r.decode_ms_per_step = stat(step);
      r.prefill_tps = b * p / (r.prefill_ms.mean * 1e-3);
      r.decode_tps = b / (r.decode_ms_per_step.mean * 1e-3);
      // Timed decode steps see lengths p+3 .. p+n+2: on average p + n/2 + 2 cached positions.
      r.step_bytes = weight_bytes + b * kv_bytes_per_pos * (p + o.n_gen / 2.0 + 2);
      r.gbs = r.step_bytes / (r.decode_ms_per_step.mean * 1e-3) / 1e9;
      if (read_gbs > 0) {
        const double floor_ms = r.step_bytes / (read_gbs * 1e9) * 1e3;
        r.roofline_pct = 100.0 * floor_ms / r.decode_ms_per_step.mean;
        r.roofline_tps = b / (floor_ms * 1e-3);
      }
      auto sm = engine.softmax_stats();
      if (!sm.ok()) return fail(sm.status());
      r.softmax = *sm;
      rows.push_back(r);
      std::fprintf(stderr, "bench: b %d p %d done\n", b, p);
    }
  }

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  if (o.output == "json") {
    meta["model"] = o.model;
    meta["date"] = date;
    meta["dtype"] = dtype_name(w.plan.dtype);
    meta["device"] = eo.device;
    meta["cuda_graphs"] = !o.no_graphs;
    meta["gemm"] = o.gemm.gemm;
    meta["pdl"] = engine.pdl_active();
    meta["fuse"] = o.gemm.fuse == "on";
    meta["gemm_table"] = engine.gemm_table_source();
    meta["softmax"] = o.softmax.softmax;
    meta["phi"] = o.softmax.phi;
    meta["weight_bytes_per_step"] = weight_bytes;
    nlohmann::json jr = nlohmann::json::array();
    for (const Row& r : rows)
      jr.push_back({{"batch", r.b}, {"prompt", r.p}, {"gen", r.n},
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
             c.model_type, dtype_name(w.plan.dtype), gpu, date, o.gemm.gemm,
             engine.pdl_active() ? "on" : "off", o.gemm.fuse);
  fmt::print("GEMM table: {}\n", engine.gemm_table_source());
  if (read_gbs > 0) fmt::print("measured streaming read bandwidth: {:.0f} GB/s\n\n", read_gbs);
  fmt::print("| b | p | n | prefill ms | prefill tok/s | decode ms/step | decode tok/s | GB/s | % roofline | roofline tok/s |\n");
  fmt::print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const Row& r : rows)
    fmt::print("| {} | {} | {} | {:.2f} ± {:.2f} | {:.0f} | {:.3f} ± {:.3f} | {:.1f} | {:.0f} | {} | {} |\n", r.b,
               r.p, r.n, r.prefill_ms.mean, r.prefill_ms.std, r.prefill_tps, r.decode_ms_per_step.mean,
               r.decode_ms_per_step.std, r.decode_tps, r.gbs,
               read_gbs > 0 ? fmt::format("{:.1f}%", r.roofline_pct) : "-",
               read_gbs > 0 ? fmt::format("{:.0f}", r.roofline_tps) : "-");
  if (!rows.empty() && (rows[0].softmax.prefill != "sync" || rows[0].softmax.decode != "sync")) {
    fmt::print("\n");
    for (const Row& r : rows) fmt::print("b {} p {}: {}\n", r.b, r.p, softmax_summary(r.softmax));
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "prefill and decode speed against the bandwidth roofline");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder")->required();
  sub->add_option("-b,--batch", o->batches, "batch sizes")->capture_default_str();
  sub->add_option("-p,--prompt", o->prompts, "prompt lengths")->capture_default_str();
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
