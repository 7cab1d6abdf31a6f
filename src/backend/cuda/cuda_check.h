// Checking every CUDA / cuBLAS call: a failure becomes a Status that names the
// statement and file:line (house rule 3). Library code returns it; only apps/ exit.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "fdpp/status.h"

namespace fdpp::cuda {

inline Status cuda_status(cudaError_t err, const char* stmt, const char* file, int line) {
  if (err == cudaSuccess) return Status::Ok();
  return CudaError(fmt::format("{} failed: {} ({}) at {}:{}", stmt, cudaGetErrorString(err),
                               cudaGetErrorName(err), file, line));
}

inline Status cublas_status(cublasStatus_t st, const char* stmt, const char* file, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return CudaError(fmt::format("{} failed: cuBLAS status {} at {}:{}", stmt, static_cast<int>(st), file, line));
}

}  // namespace fdpp::cuda

// Returns a CudaError Status from the enclosing function if the call fails.
#define FDPP_CUDA_CHECK(stmt) \
  FDPP_RETURN_IF_ERROR(::fdpp::cuda::cuda_status((stmt), #stmt, __FILE__, __LINE__))
#define FDPP_CUBLAS_CHECK(stmt) \
  FDPP_RETURN_IF_ERROR(::fdpp::cuda::cublas_status((stmt), #stmt, __FILE__, __LINE__))
// After every kernel launch: a bad launch configuration surfaces here, at its launcher.
#define FDPP_CUDA_CHECK_LAUNCH() FDPP_CUDA_CHECK(cudaGetLastError())
