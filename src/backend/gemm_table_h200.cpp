// The built-in GEMM dispatch table (backend/gemm_table.h): what the engine uses when no
// table was tuned for its GPU ("no tuned GEMM table for <GPU>; using built-in defaults").
//
// >>> PLACEHOLDER SEED, NOT MEASURED. <<< Replace this whole file with the output of
//       fdpp tune -m <Llama-2-7B> --emit-cpp src/backend/gemm_table_h200.cpp
//       (then the same for Llama-2-13B with the 7B file's shapes merged: tune writes
//        every shape its cache file holds)
// on the H200. Until then each row restates the built-in rule of gemm_plan.h for the
// Llama-2-7B and -13B shapes, so the engine behaves exactly as with no table:
//   M <= 4: ImplA (GEMV) · M <= 64: "default", the rule's flat configuration · above: cuBLASLt.
// Each row is the choice for M in (the previous row's M of the same shape, M].
#include "backend/gemm_table.h"

namespace fdpp {
namespace {

// shape, N, K, up to M, implementation, flat configuration, split-K (0: the planner's), µs
constexpr BuiltinGemmRow kRows[] = {
    // Llama-2-7B: H 4096, F 11008, V 32000
    {"qkv", 12288, 4096, 4, "gemv", "", 0, 0},
    {"qkv", 12288, 4096, 64, "default", "", 0, 0},
    {"qkv", 12288, 4096, 512, "cublas", "", 0, 0},
    {"o", 4096, 4096, 4, "gemv", "", 0, 0},
    {"o", 4096, 4096, 64, "default", "", 0, 0},
    {"o", 4096, 4096, 512, "cublas", "", 0, 0},
    {"gate_up", 22016, 4096, 4, "gemv", "", 0, 0},
    {"gate_up", 22016, 4096, 64, "default", "", 0, 0},
    {"gate_up", 22016, 4096, 512, "cublas", "", 0, 0},
    {"down", 4096, 11008, 4, "gemv", "", 0, 0},
    {"down", 4096, 11008, 64, "default", "", 0, 0},
    {"down", 4096, 11008, 512, "cublas", "", 0, 0},
    {"lm_head", 32000, 4096, 4, "gemv", "", 0, 0},
    {"lm_head", 32000, 4096, 64, "default", "", 0, 0},
    {"lm_head", 32000, 4096, 512, "cublas", "", 0, 0},
    // Llama-2-13B: H 5120, F 13824, V 32000
    {"qkv", 15360, 5120, 4, "gemv", "", 0, 0},
    {"qkv", 15360, 5120, 64, "default", "", 0, 0},
    {"qkv", 15360, 5120, 512, "cublas", "", 0, 0},
    {"o", 5120, 5120, 4, "gemv", "", 0, 0},
    {"o", 5120, 5120, 64, "default", "", 0, 0},
    {"o", 5120, 5120, 512, "cublas", "", 0, 0},
    {"gate_up", 27648, 5120, 4, "gemv", "", 0, 0},
    {"gate_up", 27648, 5120, 64, "default", "", 0, 0},
    {"gate_up", 27648, 5120, 512, "cublas", "", 0, 0},
    {"down", 5120, 13824, 4, "gemv", "", 0, 0},
    {"down", 5120, 13824, 64, "default", "", 0, 0},
    {"down", 5120, 13824, 512, "cublas", "", 0, 0},
    {"lm_head", 32000, 5120, 4, "gemv", "", 0, 0},
    {"lm_head", 32000, 5120, 64, "default", "", 0, 0},
    {"lm_head", 32000, 5120, 512, "cublas", "", 0, 0},
};

}  // namespace

const BuiltinGemmTable& builtin_gemm_table_data() {
  // cuda_runtime 0: no run made it (the seed is the rule, not a measurement).
  static constexpr BuiltinGemmTable kTable = {
      "NVIDIA H200", 132, 9, 0, 0, "f16", "seed: the built-in rule, not measured",
      kRows, static_cast<int>(sizeof(kRows) / sizeof(kRows[0]))};
  return kTable;
}

}  // namespace fdpp
