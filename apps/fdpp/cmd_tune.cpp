// fdpp tune: the GEMM dispatch table of this GPU for a model's linear shapes (design.md,
// Technique 3). Sweeps M over ImplA (GEMV), every ImplB (flat GEMM) configuration and
// cuBLASLt per distinct [N, K], keeps the fastest per M, prints M1 / M2 and the regret
// of the table per shape, and writes the table into the cache the engine reads at start
// (merged with the shapes already there). The measurement is fdpp/tune.h's; this file
// parses the flags and prints.
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "gemm_cli.h"
#include "progress_bar.h"
#include "fdpp/tune.h"

namespace fdpp::cli {
namespace {

struct TuneCliOptions {
  TuneOptions tune;
  std::string out;        // empty: <cache dir>/gemm/<this GPU and dtype>.json
  std::string cache_dir;  // empty: $FDPP_CACHE_DIR, $XDG_CACHE_HOME/fdpp, ~/.cache/fdpp
  std::string emit_cpp;
  std::string json_out;
  bool no_verify = false;
  std::string pdl = "on";  // time the kernels as the engine launches them
  std::string device = "cuda";
};

std::string pct(double r) { return fmt::format("{:.1f}%", 100.0 * r); }
std::string regret_cell(const TuneRegret& r) {
  if (r.points == 0) return "-";
  return fmt::format("{} (M {})", pct(r.max), r.worst_m);
}

// The two timings behind the worst regret, on both passes (fdpp/tune.h: TuneRegretPoint).
void print_regret_point(const TuneRegretPoint& p) {
  const auto first = [](const std::optional<double>& us) {
    return us ? fmt::format("{:.1f}", *us) : std::string("-");
  };
  fmt::print("  there the table's {} took {:.1f} µs and the fastest, {}, {:.1f} µs; on the pass "
             "the table was derived from {} and {} µs\n",
             p.choice, p.choice_us, p.best, p.best_us, first(p.choice_first_us),
             first(p.best_first_us));
}

int run_tune(const TuneCliOptions& c) {
  // Accepted so that "--device cpu" meets this sentence rather than CLI11's "not expected".
  if (c.device == "cpu")
    return fail("tune needs CUDA: it times this GPU's GEMM kernels, and --device " + c.device +
                " has none to time");
  TuneOptions o = c.tune;
  o.verify = !c.no_verify;
  o.pdl = c.pdl == "on";

  // ---- measure ----
  std::optional<ProgressBar> bar;
  TuneProgress progress;
  progress.start = [&](const TuneSweep& s) {
    bar.emplace(fmt::format("tune {} ({} shapes, M 1..{}{})", s.gpu, s.shapes, s.max_m,
                            s.passes == 2 ? ", 2 passes" : ""),
                s.measurements);
  };
  progress.step = [&](const std::string& note) { bar->step(note); };
  progress.finish = [&] { bar->finish(); };
  auto report = tune_gemm(o, progress);
  if (!report.ok()) return fail(report.status());  // then a bar left early ends its line
  const TuneReport& t = *report;

  // ---- report ----
  fmt::print("fdpp tune | {} | {} | {} | {} | M 1..{} ({} values) | {} replays, median\n",
             o.model, t.device, t.dtype, t.created, t.ms.back(), t.ms.size(), t.reps);
  fmt::print("regret = time of the choice / time of the best measured choice - 1, {}\n",
             t.passes == 2 ? "on a second, independent pass"
                           : "on the same pass (0 for the table by construction: --no-verify)");
  fmt::print("at M <= {} a shape with a norm or SiLU-gate prologue is timed as the engine runs it: "
             "the GEMV with the prologue fused, the others after its kernel\n\n",
             t.max_fused_prologue_m);
  fmt::print("| shape | N | K | M1 | M2 | table regret | M1/M2-only regret | built-in rule regret |\n");
  fmt::print("|:--|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const TuneShapeRow& r : t.shapes)
    fmt::print("| {} | {} | {} | {} | {}{} | {} | {} | {} |\n", r.name, r.n, r.k, r.m1, r.m2,
               r.monotone ? "" : " (non-monotone)", regret_cell(r.table),
               regret_cell(r.two_point), regret_cell(r.builtin));
  if (t.worst >= 0) {
    const TuneShapeRow& worst = t.shapes[t.worst];
    fmt::print("\nworst table regret: {} ({}, M = {}): {} the {} bound\n", pct(worst.table.max),
               worst.name, worst.table.worst_m, t.within ? "within" : "ABOVE", pct(t.max_regret));
  }
  if (t.worst_point) print_regret_point(*t.worst_point);
  if (!t.within)
    spdlog::warn("the table's regret exceeds {} (timing noise? try --reps 30)", pct(t.max_regret));
  // Near ties alone at batch 1 (tuning/gemm_table_derive.h: kStepTieMargin): the decode step can
  // order them differently from the alone-timing, which this tune cannot see.
  if (!t.ties.empty()) {
    fmt::print("\nnear ties alone at M = 1 (within {}): the decode step may order them otherwise; "
               "an engine started with --autotune and no table for the model settles such ties "
               "by timing decode steps\n", pct(t.step_tie_margin));
    for (const TuneStepTie& tie : t.ties) {
      std::string timed;
      for (const TuneTimedChoice& ch : tie.options)
        timed += fmt::format("{}{} {:.1f} µs", timed.empty() ? "" : ", ", ch.choice, ch.us);
      fmt::print("  {} [{}, {}]: {}; the table has {}\n", tie.shape, tie.n, tie.k, timed,
                 tie.table_choice ? *tie.table_choice : std::string("the built-in rule"));
    }
  }

  // ---- write: the cache file (merged with the shapes it holds), then the extras ----
  auto file = save_tune_table(t, c.out, c.cache_dir);
  if (!file.ok()) return fail(file.status());
  fmt::print("table: {} ({} shapes; the engine loads it for {} {})\n", file->path, file->shapes,
             file->gpu, t.dtype);

  if (!c.emit_cpp.empty()) {
    const std::string command = fmt::format("fdpp tune -m {} --dtype {} --max-m {} --reps {}",
                                            o.model, t.dtype, o.max_m, o.reps);
    if (Status s = save_tune_cpp(*file, command, c.emit_cpp); !s.ok()) return fail(s);
    fmt::print("built-in defaults source: {}\n", c.emit_cpp);
  }

  if (!c.json_out.empty())
    if (Status s = save_tune_json(t, *file, c.json_out); !s.ok()) return fail(s);
  return 0;
}

}  // namespace

void add_tune(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "tune", "measure this GPU's GEMM dispatch table (GEMV / flat GEMM / cuBLASLt per M) for a model");
  sub->add_option("-m,--model", o->tune.model, "Hugging Face model folder: its [N, K] shapes")->required();
  sub->add_option("--device", o->device, "cuda (the only device tune measures)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  sub->add_option("--dtype", o->tune.dtype, "fp16 or bf16 (default: the checkpoint's, as the engine runs it)");
  sub->add_option("--max-m", o->tune.max_m, "largest M swept (dense to 64, then sparse)")->capture_default_str();
  sub->add_option("-r,--reps", o->tune.reps, "timed graph replays per measurement")->capture_default_str();
  sub->add_option("--out", o->out, "table file (default: <cache dir>/gemm/<gpu>_<dtype>.json)");
  sub->add_option("--cache-dir", o->cache_dir,
                  "cache directory (default: $FDPP_CACHE_DIR, $XDG_CACHE_HOME/fdpp, ~/.cache/fdpp)");
  sub->add_option("--emit-cpp", o->emit_cpp,
                  "also write the table as the built-in defaults source (src/dispatch/gemm_table_h200.cpp)");
  add_pdl_option(sub, o->pdl);
  sub->add_option("--json-out", o->json_out, "also write every measurement and the regrets (scripts/plots/plot_tune.py)");
  sub->add_option("--splits", o->tune.splits,
                  "split-K counts to time for GEMV and flat GEMM besides the planner's, e.g. "
                  "1,2,3,4,6,8 (slower sweep; the GEMV always gets 1,2,3,4,6,8)")
      ->delimiter(',');
  add_cublas_algos_option(sub, o->tune.cublas_algos);
  sub->add_flag("--no-verify", o->no_verify,
                "skip the second timing pass that measures the table's regret (half the time)");
  sub->callback([o, &exit_code] { exit_code = run_tune(*o); });
}

}  // namespace fdpp::cli
