// ImplB: the flat GEMM on tensor cores (FlashDecoding++ technique 2):
// y[M, N] (+)= x[M, K] · W[N, K]ᵀ (+ bias) with mma.m16n8k16 computing
// yᵀ = W · xᵀ, so W fills the instruction's 16-row side and the batch its
// 8-column side: M is padded to a multiple of 8, not of 64. The closed set of
// configurations is kFlatConfigs (dispatch/gemm_configs.h).
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/gemm/gemm_params.h"
#include "backend/cuda/launch.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// Sets the configuration's dynamic shared-memory limit (above the 48 KB
// default) and returns its resident CTAs per SM. Must run once per device
// before run_flat_gemm launches that configuration (GemmDispatcher::create does,
// for all of them, outside any graph capture).
Result<int> prepare_flat_gemm(int config, DType dtype);

// Launches configuration `config` (index into kFlatConfigs) on `stream`; p.m_tiles
// n8 tiles of x (ceil(M / 8), at most the configuration's). Allocates nothing.
Status run_flat_gemm(int config, const GemmParams& p, DType dtype, KernelStream stream);

// ---- per-instantiation entry points (flat_gemm_<config>_<dtype>.cu) ----
template <int kConfig, DType kDType>
Status launch_flat_gemm(const GemmParams& p, KernelStream stream);
template <int kConfig, DType kDType>
Result<int> prepare_flat_gemm_config();

}  // namespace fdpp::cuda
