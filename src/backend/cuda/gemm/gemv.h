// ImplA: y[M, N] (+)= x[M, K] · W[N, K]ᵀ (+ bias) on CUDA cores for M = 1..8
// (dispatch/gemm_configs.h, GemvConfig, has the tile constants).
//
// A CTA of 4 warps owns 16 rows of W over one K split; each warp streams 4 rows
// side by side with 16-byte loads (16 loads in flight per lane for M <= 4, 8
// above), fp32 FMAs against the CTA's x slice staged once in shared memory, and
// sums its lanes with xor shuffles. Split-K (gemm_params.h) fills the GPU when
// N / 16 CTAs cannot. While it stages x it can apply the op before the GEMM — RMSNorm
// or the SiLU gate (GemvPrologue) — so that op needs no kernel of its own.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/gemm/gemm_params.h"
#include "backend/cuda/launch.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// Launches the kernel for p.m (1..8) and dtype (f16/bf16) on `stream`. The plan
// (dispatch/gemm_plan.h) has checked the shape, alignment and k_split; this
// re-checks what would make the launch unsafe. Allocates nothing.
Status run_gemv(const GemmParams& p, DType dtype, KernelStream stream);

// Resident CTAs per SM of the kernel for M = m (feeds the split-K plan).
Result<int> gemv_ctas_per_sm(int m, DType dtype);

// ---- per-instantiation entry points (gemv_<dtype>_m*.cu) ----
template <DType kDType, int kM>
Status launch_gemv(const GemmParams& p, KernelStream stream);
template <DType kDType, int kM>
Result<int> gemv_occupancy();

}  // namespace fdpp::cuda
