// fdpp bench-attention: the attention kernels alone, synchronized vs unified-max softmax
// (design.md, Technique 1). Decode: µs and GB/s of K+V read beside this GPU's streaming-read
// bandwidth measured in the same run; prefill: TFLOP/s. The method is in
// backend/cuda/bench/attention_bench.h; scripts/attention_baselines.py times torch's flash and
// cuDNN SDPA on the same configurations and merges this command's JSON into one table.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/dtype.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/attention_bench.h"
#include "backend/cuda/bench/read_bandwidth.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#endif

namespace fdpp::cli {
namespace {

struct BenchAttentionOptions {
  std::string what = "decode,prefill";
  std::string softmax = "sync,unified";
  std::string dtypes = "fp16,bf16";
  std::string batches = "1,8";
  std::string lengths = "128,1024,8192,32768";
  std::string heads = "32/32,32/8";
  std::string prefill_batches = "1,4";
  std::string prefill_lengths = "1024,4096,8192";
  std::string prefill_heads = "32/32";
  int head_dim = 128;
  std::string splits = "0";  // decode split counts to time; 0: the engine's heuristic
  std::string tiles = "auto";  // decode tensor-core warp tiles to time: auto, narrow, wide
  float phi = 0.f;
  bool follow = false;
  int reps = 20;
  std::string output = "md";
};

#ifdef FDPP_HAVE_CUDA
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// "32/8" -> {32, 8}
bool parse_heads(const std::string& s, std::pair<int, int>* out) {
  const size_t slash = s.find('/');
  try {
    if (slash == std::string::npos) {
      out->first = out->second = std::stoi(s);
    } else {
      out->first = std::stoi(s.substr(0, slash));
      out->second = std::stoi(s.substr(slash + 1));
    }
  } catch (...) {
    return false;
  }
  return out->first > 0 && out->second > 0 && out->first % out->second == 0;
}

struct Row {
  std::string kind;  // "decode" | "prefill"
  std::string dtype, softmax;
  int batch = 0, length = 0, hq = 0, hkv = 0;
  cuda::AttentionBenchResult r;
};

int run(const BenchAttentionOptions& o) {
  std::vector<std::pair<int, int>> heads, prefill_heads;
  for (const auto& [list, out] : {std::pair{&o.heads, &heads},
                                  std::pair{&o.prefill_heads, &prefill_heads}})
    for (const std::string& h : split(*list)) {
      std::pair<int, int> p;
      if (!parse_heads(h, &p)) return fail("heads '" + h + "': expected Hq/Hkv, Hq % Hkv == 0");
      out->push_back(p);
    }
  auto bs = parse_id_list(o.batches), ls = parse_id_list(o.lengths);
  auto pbs = parse_id_list(o.prefill_batches), pls = parse_id_list(o.prefill_lengths);
  auto splits = parse_id_list(o.splits);
  for (auto* r : {&bs, &ls, &pbs, &pls, &splits})
    if (!r->ok()) return fail(r->status());
  std::vector<cuda::CudaBackend::DecodeTiles> tiles;
  for (const std::string& t : split(o.tiles)) {
    if (t == "auto") tiles.push_back(cuda::CudaBackend::DecodeTiles::kAuto);
    else if (t == "narrow") tiles.push_back(cuda::CudaBackend::DecodeTiles::kNarrow);
    else if (t == "wide") tiles.push_back(cuda::CudaBackend::DecodeTiles::kWide);
    else return fail("--tiles " + t + ": expected auto, narrow and/or wide");
  }
  std::vector<SoftmaxMode> modes;
  for (const std::string& m : split(o.softmax)) {
    if (m == "sync") modes.push_back(SoftmaxMode::kSynchronized);
    else if (m == "unified") modes.push_back(SoftmaxMode::kUnified);
    else return fail("--softmax " + m + ": expected sync and/or unified");
  }
  const std::vector<std::string> what = split(o.what);
  const auto wants = [&](const char* w) {
    return std::find(what.begin(), what.end(), w) != what.end();
  };

  if (!cuda::cuda_device_available()) return fail("bench-attention needs a CUDA device");
  cudaStream_t s = nullptr;
  if (cudaStreamCreate(&s) != cudaSuccess) return fail("cannot create a CUDA stream");
  auto bw = cuda::measure_read_bandwidth(s);
  cudaStreamDestroy(s);
  if (!bw.ok()) return fail(bw.status());
  nlohmann::json meta;
  std::string gpu = "?";
  if (auto info = cuda::query_device_info(0); info.ok()) {
    gpu = info->summary();
    meta["gpu"] = info->name;
    meta["sm_count"] = info->sm_count;
  }
  meta["read_bandwidth_gbs"] = bw->gbs;

  std::vector<Row> rows;
  for (const std::string& dname : split(o.dtypes)) {
    DType dt;
    if (!parse_dtype(dname, &dt) || dt == DType::kF32) return fail("--dtype " + dname);
    cuda::CudaBackendOptions bo;
    bo.activation_dtype = dt;
    // Kernel against kernel: consecutive replayed calls do not overlap (torch's and cuDNN's
    // do not either); what PDL adds between layers is measured by fdpp bench --pdl on|off.
    bo.pdl = false;
    auto be = cuda::make_cuda_backend(bo);
    if (!be.ok()) return fail(be.status());
    const auto one = [&](const char* kind, int b, int L, std::pair<int, int> h,
                         SoftmaxMode m) -> int {
      cuda::AttentionBenchCase c;
      c.batch = b;
      c.length = L;
      c.n_heads = h.first;
      c.n_kv_heads = h.second;
      c.head_dim = o.head_dim;
      c.mode = m;
      c.phi = o.phi;
      c.follow = o.follow;
      c.reps = o.reps;
      const bool decode = std::string(kind) == "decode";
      auto r = decode ? cuda::bench_decode_attention(**be, c)
                      : cuda::bench_prefill_attention(**be, c);
      if (!r.ok()) return fail(r.status());
      rows.push_back({kind, dtype_name(dt), m == SoftmaxMode::kUnified ? "unified" : "sync", b, L,
                      h.first, h.second, *r});
      std::fprintf(stderr, "bench-attention: %s %s b %d L %d %d/%d %s: %.1f us\n", kind,
                   dtype_name(dt), b, L, h.first, h.second, rows.back().softmax.c_str(), r->us);
      return 0;
    };
    if (wants("decode"))
      for (auto h : heads)
        for (int b : *bs)
          for (int L : *ls)
            for (int s : *splits)
              for (auto t : tiles) {
                (*be)->set_decode_splits_override(s);  // 0 restores the heuristic
                (*be)->set_decode_tiles_override(t);
                for (SoftmaxMode m : modes)
                  if (int rc = one("decode", b, L, h, m)) return rc;
              }
    (*be)->set_decode_splits_override(0);
    (*be)->set_decode_tiles_override(cuda::CudaBackend::DecodeTiles::kAuto);
    if (wants("prefill"))
      for (auto h : prefill_heads)
        for (int b : *pbs)
          for (int L : *pls)
            for (SoftmaxMode m : modes)
              if (int rc = one("prefill", b, L, h, m)) return rc;
  }

  // The sync → unified gain of each configuration (same dtype, shape).
  std::map<std::string, double> sync_us;
  const auto key = [](const Row& r) {
    return fmt::format("{} {} {} {} {}/{} {} {}", r.kind, r.dtype, r.batch, r.length, r.hq,
                       r.hkv, r.r.splits, r.r.wide_tiles);
  };
  for (const Row& r : rows)
    if (r.softmax == "sync") sync_us[key(r)] = r.r.us;
  const auto gain = [&](const Row& r) -> double {
    auto it = sync_us.find(key(r));
    return r.softmax == "unified" && it != sync_us.end() && r.r.us > 0 ? it->second / r.r.us : 0;
  };

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  if (o.output == "json") {
    meta["date"] = date;
    meta["head_dim"] = o.head_dim;
    meta["phi"] = o.phi;
    meta["follow"] = o.follow;
    nlohmann::json jr = nlohmann::json::array();
    for (const Row& r : rows)
      jr.push_back({{"kind", r.kind}, {"dtype", r.dtype}, {"softmax", r.softmax},
                    {"batch", r.batch}, {"length", r.length}, {"heads_q", r.hq},
                    {"heads_kv", r.hkv}, {"us", r.r.us}, {"us_min", r.r.us_min},
                    {"gbs", r.r.gbs()}, {"tflops", r.r.tflops()}, {"splits", r.r.splits},
                    {"tiles", r.kind == "decode" ? (r.r.wide_tiles ? "wide" : "narrow") : "-"},
                    {"layers_rotated", r.r.layers}, {"rows", r.r.rows},
                    {"fallbacks", r.r.fallbacks}, {"gain_vs_sync", gain(r)}});
    meta["results"] = jr;
    std::puts(meta.dump(1).c_str());
    return 0;
  }
  fmt::print("fdpp bench-attention | {} | head_dim {} | φ {}{} | {}\n", gpu, o.head_dim, o.phi,
             o.follow ? " (follow)" : "", date);
  fmt::print("measured streaming read bandwidth: {:.0f} GB/s\n\n", bw->gbs);
  if (wants("decode")) {
    fmt::print("| decode | B | L | Hq/Hkv | softmax | µs | GB/s (K+V) | % read BW | splits | "
               "tiles | fallbacks | sync/unified |\n"
               "|--|--:|--:|--:|--|--:|--:|--:|--:|--|--:|--:|\n");
    for (const Row& r : rows)
      if (r.kind == "decode")
        fmt::print("| {} | {} | {} | {}/{} | {} | {:.1f} | {:.0f} | {:.1f}% | {} | {} | {} | {} |\n",
                   r.dtype, r.batch, r.length, r.hq, r.hkv, r.softmax, r.r.us, r.r.gbs(),
                   100 * r.r.gbs() / bw->gbs, r.r.splits, r.r.wide_tiles ? "wide" : "narrow",
                   r.softmax == "unified" ? fmt::format("{}/{}", r.r.fallbacks, r.r.rows) : "-",
                   gain(r) > 0 ? fmt::format("{:.3f}×", gain(r)) : "");
  }
  if (wants("prefill")) {
    fmt::print("\n| prefill (causal) | B | L | Hq/Hkv | softmax | ms | TFLOP/s | fallbacks | "
               "sync/unified |\n|--|--:|--:|--:|--|--:|--:|--:|--:|\n");
    for (const Row& r : rows)
      if (r.kind == "prefill")
        fmt::print("| {} (P {}) | {} | {} | {}/{} | {} | {:.3f} | {:.1f} | {} | {} |\n", r.dtype,
                   r.dtype, r.batch, r.length, r.hq, r.hkv, r.softmax, r.r.us / 1e3,
                   r.r.tflops(),
                   r.softmax == "unified" ? fmt::format("{}/{}", r.r.fallbacks, r.r.rows) : "-",
                   gain(r) > 0 ? fmt::format("{:.3f}×", gain(r)) : "");
  }
  return 0;
}
#endif

}  // namespace

void add_bench_attention(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchAttentionOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench-attention", "decode and prefill attention kernels, synchronized vs unified softmax");
  sub->add_option("--what", o->what, "decode, prefill or both")->capture_default_str();
  sub->add_option("--softmax", o->softmax, "sync, unified or both")->capture_default_str();
  sub->add_option("--dtype", o->dtypes, "fp16 and/or bf16 (the type P is rounded to in prefill)")
      ->capture_default_str();
  sub->add_option("-b,--batch", o->batches, "decode batch sizes")->capture_default_str();
  sub->add_option("-L,--lengths", o->lengths, "decode context lengths")->capture_default_str();
  sub->add_option("--heads", o->heads, "decode heads Hq/Hkv")->capture_default_str();
  sub->add_option("--prefill-batch", o->prefill_batches, "prefill batch sizes")
      ->capture_default_str();
  sub->add_option("--prefill-lengths", o->prefill_lengths, "prefill lengths")
      ->capture_default_str();
  sub->add_option("--prefill-heads", o->prefill_heads, "prefill heads Hq/Hkv")
      ->capture_default_str();
  sub->add_option("--head-dim", o->head_dim, "head_dim")->capture_default_str();
  sub->add_option("--splits", o->splits,
                  "decode split counts to time (clamped to 1..128; 0: the engine's heuristic)")
      ->capture_default_str();
  sub->add_option("--tiles", o->tiles,
                  "decode: the tensor-core kernel's warp tiles at head_dim 128 to time (auto: the "
                  "engine's rule; narrow, wide)")
      ->capture_default_str();
  sub->add_option("--phi", o->phi, "unified: φ of every head (s units)")->capture_default_str();
  sub->add_flag("--follow", o->follow, "unified decode: row-following φ");
  sub->add_option("-r,--reps", o->reps, "timed repetitions")->capture_default_str();
  sub->add_option("-o,--output", o->output, "md or json")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  sub->callback([o, &exit_code] {
#ifdef FDPP_HAVE_CUDA
    exit_code = run(*o);
#else
    exit_code = fail("bench-attention needs a CUDA build (configure with -DFDPP_CUDA=ON)");
#endif
  });
}

}  // namespace fdpp::cli
