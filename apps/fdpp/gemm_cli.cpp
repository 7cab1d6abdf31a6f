#include "gemm_cli.h"

#include "dispatch/gemm_plan.h"

namespace fdpp::cli {

void add_gemm_options(CLI::App* sub, GemmCliOptions& o, bool with_tuning) {
  sub->add_option("--gemm", o.gemm,
                  "linear layers on CUDA: auto (dispatch table), gemv, flat or cublas")
      ->check(CLI::IsMember({"auto", "gemv", "flat", "cublas"}))
      ->capture_default_str();
  add_pdl_option(sub, o.pdl);
  sub->add_option("--fuse", o.fuse,
                  "RMSNorm and the SiLU gate inside the GEMV's load of x (CUDA decode at batch 1) "
                  "instead of kernels of their own")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  if (!with_tuning) return;
  sub->add_option("--gemm-table", o.gemm_table,
                  "GEMM dispatch table file (default: this GPU's from fdpp tune, else built-in "
                  "defaults)");
  sub->add_flag("--autotune", o.autotune,
                "tune the model's GEMM shapes at start when the table lacks them (about 5 s "
                "for a 7B model on an H200), and save");
}

void apply_gemm_options(const GemmCliOptions& o, EngineOptions* eo) {
  eo->gemm = o.gemm;
  eo->gemm_table = o.gemm_table;
  eo->autotune = o.autotune;
  eo->pdl = o.pdl == "on";
  eo->fuse = o.fuse == "on";
}

void add_cublas_algos_option(CLI::App* sub, int& cublas_algos) {
  sub->add_option("--cublas-algos", cublas_algos,
                  "time cuBLASLt's first N heuristic answers and keep the fastest (1: the "
                  "library's own pick)")
      ->check(CLI::Range(1, kMaxCublasAlgo + 1))
      ->capture_default_str();
}

void add_pdl_option(CLI::App* sub, std::string& pdl) {
  sub->add_option("--pdl", pdl,
                  "programmatic dependent launch (sm_90+): each kernel starts while the previous "
                  "one finishes")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
}

}  // namespace fdpp::cli
