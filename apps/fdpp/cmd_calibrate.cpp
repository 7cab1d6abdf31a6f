// fdpp calibrate: runs text through the model (synchronized softmax), records the scaled
// attention scores s = q·k/√d of every layer, prints the range that covers 99.99% of them
// (FlashDecoding++'s Figure 5) with the fallback rates each φ source would have, and writes
// φ per layer (and per KV head) to the calibration file the engine loads (fdpp/calibrate.h;
// design.md, Technique 1). The measurement is the library's; this file parses and prints.
#include <cstdio>

#include <fmt/format.h>

#include "commands.h"
#include "fdpp/calibrate.h"

namespace fdpp::cli {
namespace {

struct CalibrateCliOptions {
  CalibrateOptions calibrate;
  std::string out;
};

std::string pct(double rate) { return fmt::format("{:.3f}%", 100.0 * rate); }

int run_calibrate(const CalibrateCliOptions& co) {
  const CalibrateOptions& o = co.calibrate;
  auto report = calibrate(o, [](int64_t tokens) {
    std::fprintf(stderr, "calibrate: %lld tokens\n", static_cast<long long>(tokens));
  });
  if (!report.ok()) return fail(report.status());
  const CalibrateReport& c = *report;

  fmt::print("fdpp calibrate | {} | {} | {} tokens in {} sequences of <= {} | {}\n", o.model,
             c.model_type, c.tokens, c.sequences, c.seq_len, c.device);
  fmt::print("scaled scores s = q·k/sqrt({}): {:.2f}% of them in [{:.1f}, {:.1f}] "
             "(all layers; min {:.1f}, max {:.1f})\n\n",
             c.head_dim, 100 * o.coverage, c.score_lo, c.score_hi, c.score_min, c.score_max);
  fmt::print("| layer | min | {:.3f}% | {:.3f}% | max | row max | φ | prefill fp16 P | "
             "prefill bf16 P | decode calibrated | decode follow | fp16-P range: calibrated / "
             "follow |\n",
             50 * (1 - o.coverage), 100 - 50 * (1 - o.coverage));
  fmt::print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const CalibrateLayerRow& L = c.layers[l];
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

  auto written = save_calibration_report(c, co.out);
  if (!written.ok()) return fail(written.status());
  fmt::print("written: {}\n", *written);
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrateCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "measure attention scores and write the unified softmax's φ per layer");
  sub->add_option("-m,--model", o->calibrate.model, "Hugging Face model folder")->required();
  sub->add_option("--text", o->calibrate.text, "calibration text file (default: the built-in text)");
  sub->add_option("--tokens", o->calibrate.tokens, "use at most this many tokens of the text; 0: all")
      ->capture_default_str();
  sub->add_option("--seq-len", o->calibrate.seq_len, "tokens per sequence; 0: min(context, 4096)")
      ->capture_default_str();
  sub->add_option("--out", o->out,
                  "calibration file (default: <model>/fdpp_calibration.json if writable, else "
                  "<cache>/calibration/<fingerprint>.json, <cache> being $FDPP_CACHE_DIR, "
                  "$XDG_CACHE_HOME/fdpp or ~/.cache/fdpp)");
  sub->add_option("--device", o->calibrate.device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--dtype", o->calibrate.dtype, "fp16 or bf16 on CUDA");
  sub->add_option("--coverage", o->calibrate.coverage, "share of scores the printed range covers")
      ->check(finite_number())
      ->capture_default_str();
  sub->callback([o, &exit_code] { exit_code = run_calibrate(*o); });
}

}  // namespace fdpp::cli
