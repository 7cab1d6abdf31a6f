// The measurement behind fdpp tune: this GPU's GEMM dispatch table for a model's linear
// shapes (design.md, Technique 3). tune_gemm sweeps M over ImplA (GEMV), every ImplB (flat
// GEMM) configuration and cuBLASLt per distinct [N, K] and returns the table's report; the
// save_* calls then write it, so an app prints the report before a write can fail, and a
// failed write still leaves the measurements on screen.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

struct TuneOptions {
  std::string model;  // Hugging Face model folder: its [N, K] shapes
  std::string dtype;  // "fp16" or "bf16"; empty: the checkpoint's, as the engine picks it
  int max_m = 512;    // 1..65536
  int reps = 10;      // timed graph replays per measurement, at least 1
  bool verify = true;  // a second, independent pass measures the regret
  std::vector<int> splits;  // extra split-K counts timed for ImplA / ImplB, each positive
  bool pdl = true;          // time the kernels as the engine launches them
  // cuBLASLt heuristic answers timed per (shape, M). 1: the library's pick. Later answers
  // looked faster in single runs, but no table that kept them held the regret bound on its
  // own verification pass (their timings do not repeat; the library's pick does), so
  // profiling them is opt-in (docs/techniques.md; the figures: docs/experiments/log.md,
  // "cuBLASLt answers by profiling").
  int cublas_algos = 1;
};

// How much slower a rule is than the best measured choice over a shape's M
// (tuning/gemm_table_derive.h: GemmRegret).
struct TuneRegret {
  double max = 0;
  int worst_m = 0;  // 0 when no M was compared
  double mean = 0;
  int points = 0;
  int unmeasured = 0;
};

struct TuneShapeRow {
  std::string name;
  int64_t n = 0, k = 0;
  int m1 = 0, m2 = 0;  // the GEMV up to M1, flat GEMM up to M2, cuBLASLt above
  bool monotone = true;
  TuneRegret table;      // the table's lookups
  TuneRegret two_point;  // just M1 / M2
  TuneRegret builtin;    // the built-in rule
};

// The two timings behind the worst regret, on both passes: whether the table's choice slowed
// down or its rival sped up (on the H200 cuBLASLt's time on some shapes moves by ~10%
// between passes while the GEMV's stays within 0.5%: docs/experiments/log.md).
struct TuneRegretPoint {
  std::string choice, best;  // the dispatch-table spellings
  double choice_us = 0, best_us = 0;  // on the verification pass
  // The same choices on the pass the table was derived from; nullopt: not measured there.
  std::optional<double> choice_first_us, best_first_us;
};

struct TuneTimedChoice {
  std::string choice;
  double us = 0;  // alone, per call
};

// A near tie alone at M = 1 (tuning/gemm_table_derive.h: kStepTieMargin): the decode step can
// order its choices differently from the alone-timing, which a tune cannot see.
struct TuneStepTie {
  std::string shape;
  int64_t n = 0, k = 0;
  std::vector<TuneTimedChoice> options;  // the fastest alone first
  std::optional<std::string> table_choice;  // nullopt: the table leaves M = 1 to the built-in rule
};

struct GemmTuneState;  // the table and timings save_tune_* write (src/api/tune.cpp)

struct TuneReport {
  std::string device;  // the GPU's summary as bench-gemm prints it
  std::string dtype;   // "f16" | "bf16"
  std::string created;  // the table's date
  std::vector<int> ms;  // the M swept
  int reps = 0;
  int passes = 1;  // 2 with verification
  // At M <= this a shape with a norm or SiLU-gate prologue is timed as the engine runs it.
  int max_fused_prologue_m = 0;
  // The regret bound: the table may cost at most this over the best choice.
  double max_regret = 0;
  double step_tie_margin = 0;
  // Regrets on the verification pass (on the pass they were derived from, without one).
  std::vector<TuneShapeRow> shapes;
  int worst = -1;       // index into shapes of the largest table regret; -1: no shapes
  bool within = true;   // the worst table regret is within max_regret
  std::optional<TuneRegretPoint> worst_point;  // with verification and a positive worst regret
  std::vector<TuneStepTie> ties;  // at M = 1
  std::shared_ptr<const GemmTuneState> state;
};

// What the sweep will time, before it starts.
struct TuneSweep {
  std::string gpu;  // the device's name
  int shapes = 0;   // distinct [N, K]
  int max_m = 0;    // the largest M swept
  int passes = 1;
  int64_t measurements = 0;  // an upper bound over all passes
};

struct TuneProgress {
  std::function<void(const TuneSweep&)> start;
  // After each measurement: the shape, M and choice just timed ("qkv M=8 gemv/s2").
  std::function<void(const std::string& note)> step;
  std::function<void()> finish;  // the sweep is over
};

// Measures the table (and, with verification, its regret). Unsupported without CUDA or a
// CUDA device; InvalidArgument for a bad option, its flag named.
Result<TuneReport> tune_gemm(const TuneOptions& options, const TuneProgress& progress = {});

struct TuneTableFile {
  std::string path;
  int shapes = 0;            // in the file after the merge
  std::string gpu;           // the identity the engine matches the file to
  std::shared_ptr<const GemmTuneState> merged;
};

// Writes the table into `out`, or when it is empty the cache file the engine reads at start
// (<cache_dir>/gemm/<this GPU and dtype>.json; cache_dir empty: $FDPP_CACHE_DIR,
// $XDG_CACHE_HOME/fdpp, ~/.cache/fdpp), merged with the shapes of other models already there.
// A file there from another GPU or dtype, or unreadable, is replaced with a warning.
Result<TuneTableFile> save_tune_table(const TuneReport& report, const std::string& out,
                                      const std::string& cache_dir);

// The merged table as the built-in defaults source (src/dispatch/gemm_table_h200.cpp);
// `command` is quoted in its header comment.
Status save_tune_cpp(const TuneTableFile& table, const std::string& command,
                     const std::string& path);

// Every measurement of both passes and the regrets, for scripts/plots/plot_tune.py.
Status save_tune_json(const TuneReport& report, const TuneTableFile& table,
                      const std::string& path);

}  // namespace fdpp
