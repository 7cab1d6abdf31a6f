// How the engine picks its GEMM dispatch table (design.md, Technique 3), once, at
// Engine::create, when the CUDA backend runs with --gemm auto (or flat, whose
// configuration the table names too):
//   1. --gemm-table FILE: that file; missing, malformed or from another GPU or dtype is
//      an error (it was asked for by name);
//   2. the cache file of this GPU and dtype (backend/gemm_table.h: gemm_table_path),
//      unless it is malformed or from another GPU: then one warning, and on to 3;
//   3. the built-in defaults (backend/gemm_table_h200.cpp), with one info line.
// With --autotune, shapes of the model that 1/2 lack (all of them without a file) are
// tuned first and saved into the cache file. The table is fixed from then on, so every
// captured decode graph runs the plan it was captured with.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "fdpp/engine.h"
#include "model/config.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/gemm_bench.h"
#endif

namespace fdpp {

// Installs the table on the backend; returns what `fdpp bench` reports as the table
// in use: "file PATH", "built-in defaults (…)", or "none (why)".
Result<std::string> setup_gemm_table(const EngineOptions& options, const ModelConfig& cfg,
                                     Backend& backend);

#ifdef FDPP_HAVE_CUDA
// The model's GEMMs as the tuner takes them (model/gemm_shapes.h): one per distinct
// [N, K], the names of those sharing it joined, each with the prologue it runs after.
// `fdpp tune` and --autotune tune exactly these.
std::vector<cuda::GemmBenchShape> model_gemm_bench_shapes(const ModelConfig& cfg);
#endif

}  // namespace fdpp
