// How the engine picks its GEMM dispatch table (design.md, Technique 3), once, at
// Engine::create, when the CUDA backend runs with --gemm auto (or flat, whose
// configuration the table names too):
//   1. --gemm-table FILE: that file; missing, malformed or from another GPU or dtype is
//      an error (it was asked for by name);
//   2. the cache file of this GPU and dtype (tuning/gemm_table_files.h: gemm_table_path),
//      unless it is malformed or from another GPU: then one warning, and on to 3;
//   3. the built-in defaults (dispatch/gemm_table_h200.cpp), with one info line.
// With --autotune, shapes of the model that 1/2 lack (all of them without a file) are
// tuned first and saved into the cache file; the batch-1 near ties of that tune
// (tuning/gemm_table_derive.h: gemm_step_ties) are then settled by the engine once the model is
// loaded, by timing decode steps with each choice (Engine::create), and the file is saved
// again. The table is fixed from then on, so every captured decode graph runs the plan it
// was captured with.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "dispatch/gemm_table.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "tuning/gemm_table_derive.h"

namespace fdpp {

// What --autotune leaves for the engine to settle once it can run decode steps.
struct GemmTableTune {
  TunedGemmTable table;             // as installed
  std::string path;                 // where it was saved ("" : it could not be)
  std::vector<GemmStepTie> ties;    // at M = 1
};

// Installs the table on the backend; returns what `fdpp bench` reports as the table
// in use: "file PATH", "built-in defaults (…)", or "none (why)". When --autotune tuned
// shapes with batch-1 near ties, `tune` (if given) receives them with the table.
Result<std::string> setup_gemm_table(const EngineOptions& options, const ModelConfig& cfg,
                                     Backend& backend, GemmTableTune* tune = nullptr);

// Settles each near tie of `tune` by the decode step: time_step(table) runs decode steps
// with `table` installed and returns the step time in ms. The choices of a tie are timed in
// turn, `rounds` times, and the one with the fastest step is kept (ties settled earlier stay
// settled while later ones are timed). Returns the table with the winners; logs each tie.
using GemmStepTimer = std::function<Result<double>(const TunedGemmTable&)>;
Result<TunedGemmTable> settle_gemm_step_ties(const GemmTableTune& tune,
                                             const GemmStepTimer& time_step, int rounds = 2);

// Installs `table` on the backend (Backend::set_gemm_table: the decode graphs captured
// before keep the plan they were captured with); Unsupported on a backend without a table.
Status install_gemm_table(Backend& backend, TunedGemmTable table);

}  // namespace fdpp
