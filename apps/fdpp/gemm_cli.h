// The GEMM-dispatch options every engine command shares (--gemm, --gemm-table, --autotune;
// design.md, Technique 3), --pdl, which decides how each GEMM overlaps its neighbours, and
// --fuse, which decides whether the GEMV applies the norm / SiLU gate before it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "fdpp/engine.h"

namespace fdpp::cli {

struct GemmCliOptions {
  std::string gemm = "auto";
  std::string gemm_table;
  bool autotune = false;
  std::string pdl = "on";
  std::string fuse = "on";
};

// `with_tuning`: also --gemm-table and --autotune (commands that run a model for speed).
void add_gemm_options(CLI::App* sub, GemmCliOptions& o, bool with_tuning = true);
void apply_gemm_options(const GemmCliOptions& o, EngineOptions* eo);
// --pdl on|off: programmatic dependent launch between fdpp's kernels (with --gemm, since it
// changes how each GEMM overlaps its neighbours; also on bench-gemm and tune).
void add_pdl_option(CLI::App* sub, std::string& pdl);
// --cublas-algos N: cuBLASLt's first N heuristic answers are timed (bench-gemm and tune);
// CLI11 refuses values outside 1..max_cublas_algo() + 1.
void add_cublas_algos_option(CLI::App* sub, int& cublas_algos);

}  // namespace fdpp::cli
