// fdpp calibrate: runs text through the model (synchronized softmax), records the scaled
// attention scores s = q·k/√d of every layer, prints the range that covers 99.99% of them
// (FlashDecoding++'s Figure 5) with the fallback rates each φ source would have, and writes
// φ per layer (and per KV head) to the calibration file the engine loads
// (tuning/calibration.h; design.md, Technique 1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "commands.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model.h"
#include "tuning/calibration.h"
#include "tuning/score_statistics.h"
#include "tokenizer/tokenizer.h"

namespace fdpp::cli {
namespace {

struct CalibrateOptions {
  std::string model;
  std::string text;  // a file; empty: the built-in text
  int tokens = 0;    // 0: all of the text
  int seq_len = 0;   // tokens per sequence; 0: min(context, 4096)
  std::string out;
  std::string device = "auto";
  std::string dtype;
  double coverage = 0.9999;
};

std::string pct(double rate) { return fmt::format("{:.3f}%", 100.0 * rate); }

int run_calibrate(const CalibrateOptions& o) {
  if (o.tokens < 0 || o.seq_len < 0) return fail("--tokens and --seq-len must not be negative");
  if (!(o.coverage > 0.5 && o.coverage < 1.0)) return fail("--coverage must lie in (0.5, 1)");
  auto cfg = load_model_config(o.model);
  if (!cfg.ok()) return fail(cfg.status());
  const int seq_len = o.seq_len > 0 ? o.seq_len : std::min(cfg->max_position_embeddings, 4096);

  std::string text = builtin_calibration_text();
  if (!o.text.empty()) {
    std::ifstream f(o.text, std::ios::binary);
    if (!f) return fail("cannot read --text " + o.text);
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }

  EngineOptions eo;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  eo.context = seq_len;
  eo.prefill_chunk = seq_len;
  eo.max_batch = 1;
  eo.cuda_graphs = false;
  eo.softmax = "sync";  // the exact path measures the scores
  auto engine_or = Engine::create(eo);
  if (!engine_or.ok()) return fail(engine_or.status());
  Engine& engine = **engine_or;
  const Tokenizer* tok = engine.tokenizer();
  if (!tok) return fail(o.model + " has no tokenizer: calibration needs text");
  auto ids_or = tok->encode(text, false);
  if (!ids_or.ok()) return fail(ids_or.status());
  std::vector<int> ids = std::move(ids_or).value();
  if (o.tokens > 0 && static_cast<int>(ids.size()) > o.tokens) ids.resize(o.tokens);
  if (ids.empty()) return fail("the calibration text has no tokens");

  // Sequences of at most seq_len tokens, each starting with BOS as a prompt does.
  const int bos = tok->bos_id();
  const int body = seq_len - (bos >= 0 ? 1 : 0);
  if (body < 1) return fail("--seq-len is too short");
  ScoreStatistics stats;
  for (size_t at = 0; at < ids.size(); at += body) {
    std::vector<int> seq;
    seq.reserve(static_cast<size_t>(body) + 1);
    if (bos >= 0) seq.push_back(bos);
    for (size_t i = at; i < std::min(ids.size(), at + body); ++i) seq.push_back(ids[i]);
    const Status st = collect_score_statistics(engine.model(), seq, &stats);
    if (!st.ok()) return fail(st);
    std::fprintf(stderr, "calibrate: %lld tokens\n", static_cast<long long>(stats.tokens));
  }

  Calibration c = build_calibration(stats, o.coverage);
  auto fp = model_fingerprint(o.model);
  if (!fp.ok()) return fail(fp.status());
  c.fingerprint = *fp;
  c.model_type = cfg->model_type;
  c.head_dim = cfg->head_dim;
  c.text = o.text.empty() ? "built-in" : o.text;

  const ScoreRange all = model_score_range(stats, o.coverage);
  fmt::print("fdpp calibrate | {} | {} | {} tokens in {} sequences of <= {} | {}\n", o.model,
             cfg->model_type, stats.tokens, c.sequences, seq_len, eo.device);
  fmt::print("scaled scores s = q·k/sqrt({}): {:.2f}% of them in [{:.1f}, {:.1f}] "
             "(all layers; min {:.1f}, max {:.1f})\n\n",
             cfg->head_dim, 100 * o.coverage, all.lo, all.hi, all.min, all.max);
  fmt::print("| layer | min | {:.3f}% | {:.3f}% | max | row max | φ | prefill fp16 P | "
             "prefill bf16 P | decode calibrated | decode follow | fp16-P range: calibrated / "
             "follow |\n",
             50 * (1 - o.coverage), 100 - 50 * (1 - o.coverage));
  fmt::print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const CalibrationLayer& L = c.layers[l];
    auto fr = [&](const char* k) { return pct(L.fallback_rate.at(k)); };
    fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | [{:.1f}, {:.1f}] | {:.2f} | {} | {} | "
               "{} | {} | {} / {} |\n",
               l, L.score_min, L.score_lo, L.score_hi, L.score_max, L.row_max_min,
               L.row_max_max, L.phi, fr("prefill_fp16p"), fr("prefill_bf16p"),
               fr("decode_calibrated"), fr("decode_follow"), fr("decode_calibrated_fp16p_range"),
               fr("decode_follow_fp16p_range"));
  }
  fmt::print("\nφ granularity: {} (per-KV-head φ is kept when it halves the prefill "
             "fallbacks)\n",
             c.granularity);

  std::filesystem::path out = o.out;
  if (out.empty())
    out = directory_writable(o.model) ? calibration_path_in_model(o.model)
                                      : calibration_path_in_cache(c.fingerprint);
  const Status saved = save_calibration(c, out);
  if (!saved.ok()) return fail(saved);
  fmt::print("written: {}\n", out.string());
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "measure attention scores and write the unified softmax's φ per layer");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder")->required();
  sub->add_option("--text", o->text, "calibration text file (default: the built-in text)");
  sub->add_option("--tokens", o->tokens, "use at most this many tokens of the text; 0: all")
      ->capture_default_str();
  sub->add_option("--seq-len", o->seq_len, "tokens per sequence; 0: min(context, 4096)")
      ->capture_default_str();
  sub->add_option("--out", o->out,
                  "calibration file (default: <model>/fdpp_calibration.json if writable, else "
                  "$XDG_CACHE_HOME/fdpp/calibration/<fingerprint>.json)");
  sub->add_option("--device", o->device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--dtype", o->dtype, "fp16 or bf16 on CUDA");
  sub->add_option("--coverage", o->coverage, "share of scores the printed range covers")
      ->capture_default_str();
  sub->callback([o, &exit_code] { exit_code = run_calibrate(*o); });
}

}  // namespace fdpp::cli
