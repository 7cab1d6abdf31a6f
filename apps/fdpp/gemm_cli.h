// The GEMM-dispatch options every engine command shares (--gemm, --gemm-table, --autotune;
// design.md, Technique 3).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "fdpp/engine.h"

namespace fdpp::cli {

struct GemmCliOptions {
  std::string gemm = "auto";
  std::string gemm_table;
  bool autotune = false;
};

// `with_tuning`: also --gemm-table and --autotune (commands that run a model for speed).
void add_gemm_options(CLI::App* sub, GemmCliOptions& o, bool with_tuning = true);
void apply_gemm_options(const GemmCliOptions& o, EngineOptions* eo);

}  // namespace fdpp::cli
