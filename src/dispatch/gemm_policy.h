// Which GEMM implementation serves linear(): `--gemm auto|gemv|flat|cublas`.
// CUDA-free, so the engine options and the CLI can name a policy in any build.
#pragma once

#include <string_view>

namespace fdpp {

enum class GemmPolicy {
  kAuto,    // the dispatch table (built-in defaults until `fdpp tune` writes one)
  kGemv,    // ImplA (CUDA-core GEMV) wherever it can run the shape, cuBLASLt elsewhere
  kFlat,    // ImplB (tensor-core flat GEMM) wherever it can run the shape, cuBLASLt elsewhere
  kCublas,  // ImplC everywhere: the baseline of the ablations
};

// "auto", "gemv", "flat", "cublas".
const char* gemm_policy_name(GemmPolicy p);
// Parses the spellings above (and "cublaslt" for kCublas); false for anything else.
bool parse_gemm_policy(std::string_view s, GemmPolicy* out);

}  // namespace fdpp
