// fdpp bench-attention: the attention kernels alone, synchronized vs unified-max softmax
// (design.md, Technique 1). Decode: µs and GB/s of K+V read beside this GPU's streaming-read
// bandwidth measured in the same run; prefill: TFLOP/s. The method is in
// backend/cuda/bench/attention_bench.h; scripts/baselines/attention_baselines.py times torch's
// flash and cuDNN SDPA on the same configurations and merges this command's JSON into one table.
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
#include "fdpp/bench.h"

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
  AttentionBenchSpec spec;
  for (const std::string& t : split(o.tiles)) {
    if (t == "auto") spec.tiles.push_back(AttentionTiles::kAuto);
    else if (t == "narrow") spec.tiles.push_back(AttentionTiles::kNarrow);
    else if (t == "wide") spec.tiles.push_back(AttentionTiles::kWide);
    else return fail("--tiles " + t + ": expected auto, narrow and/or wide");
  }
  for (const std::string& m : split(o.softmax)) {
    if (m == "sync") spec.softmax.push_back(AttentionSoftmax::kSync);
    else if (m == "unified") spec.softmax.push_back(AttentionSoftmax::kUnified);
    else return fail("--softmax " + m + ": expected sync and/or unified");
  }
  const std::vector<std::string> what = split(o.what);
  const auto wants = [&](const char* w) {
    return std::find(what.begin(), what.end(), w) != what.end();
  };
  spec.decode = wants("decode");
  spec.prefill = wants("prefill");
  spec.dtypes = split(o.dtypes);
  spec.batches = *bs;
  spec.lengths = *ls;
  spec.heads = heads;
  spec.prefill_batches = *pbs;
  spec.prefill_lengths = *pls;
  spec.prefill_heads = prefill_heads;
  spec.head_dim = o.head_dim;
  spec.splits = *splits;
  spec.phi = o.phi;
  spec.follow = o.follow;
  spec.reps = o.reps;
  auto report = bench_attention(spec, [](const AttentionBenchRecord& r) {
    std::fprintf(stderr, "bench-attention: %s %s b %d L %d %d/%d %s: %.1f us\n", r.kind.c_str(),
                 r.dtype.c_str(), r.batch, r.length, r.heads_q, r.heads_kv, r.softmax.c_str(), r.us);
  });
  if (!report.ok()) return fail(report.status());
  const std::vector<AttentionBenchRecord>& rows = report->records;
  const ReadBandwidth& bw = report->bandwidth;
  nlohmann::json meta;
  std::string gpu = "?";
  if (report->gpu) {
    gpu = report->gpu->summary;
    meta["gpu"] = report->gpu->name;
    meta["sm_count"] = report->gpu->sm_count;
  }
  meta["read_bandwidth_gbs"] = bw.gbs;

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  if (o.output == "json") {
    meta["date"] = date;
    meta["head_dim"] = o.head_dim;
    meta["phi"] = o.phi;
    meta["follow"] = o.follow;
    nlohmann::json jr = nlohmann::json::array();
    for (const AttentionBenchRecord& r : rows)
      jr.push_back({{"kind", r.kind}, {"dtype", r.dtype}, {"softmax", r.softmax},
                    {"batch", r.batch}, {"length", r.length}, {"heads_q", r.heads_q},
                    {"heads_kv", r.heads_kv}, {"us", r.us}, {"us_min", r.us_min},
                    {"gbs", r.gbs}, {"tflops", r.tflops}, {"splits", r.splits},
                    {"tiles", r.kind == "decode" ? (r.wide_tiles ? "wide" : "narrow") : "-"},
                    {"layers_rotated", r.layers}, {"rows", r.rows},
                    {"fallbacks", r.fallbacks}, {"gain_vs_sync", r.gain_vs_sync}});
    meta["results"] = jr;
    std::puts(meta.dump(1).c_str());
    return 0;
  }
  fmt::print("fdpp bench-attention | {} | head_dim {} | φ {}{} | {}\n", gpu, o.head_dim, o.phi,
             o.follow ? " (follow)" : "", date);
  fmt::print("measured streaming read bandwidth: {:.0f} GB/s\n\n", bw.gbs);
  if (wants("decode")) {
    fmt::print("| decode | B | L | Hq/Hkv | softmax | µs | GB/s (K+V) | % read BW | splits | "
               "tiles | fallbacks | sync/unified |\n"
               "|--|--:|--:|--:|--|--:|--:|--:|--:|--|--:|--:|\n");
    for (const AttentionBenchRecord& r : rows)
      if (r.kind == "decode")
        fmt::print("| {} | {} | {} | {}/{} | {} | {:.1f} | {:.0f} | {:.1f}% | {} | {} | {} | {} |\n",
                   r.dtype, r.batch, r.length, r.heads_q, r.heads_kv, r.softmax, r.us, r.gbs,
                   100 * r.gbs / bw.gbs, r.splits, r.wide_tiles ? "wide" : "narrow",
                   r.softmax == "unified" ? fmt::format("{}/{}", r.fallbacks, r.rows) : "-",
                   r.gain_vs_sync > 0 ? fmt::format("{:.3f}×", r.gain_vs_sync) : "");
  }
  if (wants("prefill")) {
    fmt::print("\n| prefill (causal) | B | L | Hq/Hkv | softmax | ms | TFLOP/s | fallbacks | "
               "sync/unified |\n|--|--:|--:|--:|--|--:|--:|--:|--:|\n");
    for (const AttentionBenchRecord& r : rows)
      if (r.kind == "prefill")
        fmt::print("| {} (P {}) | {} | {} | {}/{} | {} | {:.3f} | {:.1f} | {} | {} |\n", r.dtype,
                   r.dtype, r.batch, r.length, r.heads_q, r.heads_kv, r.softmax, r.us / 1e3,
                   r.tflops,
                   r.softmax == "unified" ? fmt::format("{}/{}", r.fallbacks, r.rows) : "-",
                   r.gain_vs_sync > 0 ? fmt::format("{:.3f}×", r.gain_vs_sync) : "");
  }
  return 0;
}

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
  sub->add_option("--phi", o->phi, "unified: φ of every head (s units)")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_flag("--follow", o->follow, "unified decode: row-following φ");
  sub->add_option("-r,--reps", o->reps, "timed repetitions")->capture_default_str();
  sub->add_option("-o,--output", o->output, "md or json")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  sub->callback([o, &exit_code] {
    exit_code = built_with_cuda()
                    ? run(*o)
                    : fail("bench-attention needs a CUDA build (configure with -DFDPP_CUDA=ON)");
  });
}

}  // namespace fdpp::cli
