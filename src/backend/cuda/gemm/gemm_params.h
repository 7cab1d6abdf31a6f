// The one parameter struct of the custom GEMM kernels (ImplA gemv, ImplB flat
// GEMM): y[M, N] (+)= x[M, K] · W[N, K]ᵀ (+ bias[N]), fp32 accumulation,
// optionally split along K into `splits` ranges of k_split elements.
//
// Split-K is deterministic: every CTA of a split writes its fp32 tile into
// `partial`, then takes a ticket from its tile's arrival counter; the CTA that
// draws the last ticket sums the splits' partials in split order (so the result
// does not depend on which CTA finished last), applies the epilogue and resets
// the counter to 0 for the next launch (which graphs rely on).
#pragma once

#include <cstdint>

namespace fdpp::cuda {

// What ImplA does to x while it stages it, so that the op before the GEMM needs no
// kernel of its own (Backend::fused_linear):
//  * kRmsNorm: x'[m, :] = rmsnorm(x[m, :]) · norm_weight, x (m, k); computed as
//    (1/rms) · (T(x · norm_weight) · wᵀ), the row's scale applied after the dot product;
//  * kSiluMul: x'[m, :] = silu(gate) · up with gate|up = x[m, :k | k:], x (m, 2k).
enum class GemvPrologue { kNone, kRmsNorm, kSiluMul };

struct GemmParams {
  const void* x = nullptr;     // (m, k), or (m, 2k) for kSiluMul; 16-byte aligned, k % 8 == 0
  const void* w = nullptr;     // (n, k), 16-byte aligned
  void* y = nullptr;           // (m, n): read only when accumulate
  const void* bias = nullptr;  // (n) of the activation dtype, or nullptr
  float* partial = nullptr;    // (splits, m, n) fp32; used when splits > 1
  int* counters = nullptr;     // (tiles) arrival tickets, all 0 between launches; splits > 1
  int m = 0;
  int n = 0;
  int k = 0;
  int k_split = 0;  // K elements per split; split s covers [s·k_split, min(k, (s+1)·k_split))
  int splits = 1;
  int m_tiles = 1;  // flat GEMM: n8 tiles of x in use, ceil(m / 8)
  bool accumulate = false;  // y += …: the residual add
  // ImplA only (the flat GEMM refuses anything but kNone).
  GemvPrologue prologue = GemvPrologue::kNone;
  const void* norm_weight = nullptr;  // kRmsNorm: (k), 16-byte aligned
  float norm_eps = 0.f;               // kRmsNorm
};

}  // namespace fdpp::cuda
