// Status reporting for the .cu files. nvcc 13 cannot compile fmt v9 (its EDG
// front end rejects fmt's consteval format strings and its host pass fmt's
// constexpr helpers), so kernel launchers include neither fmt nor cuda_check.h:
// they check calls with these macros, and the message is built in
// kernel_status.cpp by the host compiler, in cuda_check.h's format.
#pragma once

#include <cuda_runtime.h>

#include "fdpp/status.h"

namespace fdpp::cuda {

// cuda_status() of cuda_check.h: "stmt failed: <error string> (<name>) at file:line".
Status cuda_call_status(cudaError_t err, const char* stmt, const char* file, int line);

}  // namespace fdpp::cuda

// Returns a CudaError Status from the enclosing function if the call fails.
#define FDPP_KERNEL_CHECK(stmt)                                                       \
  do {                                                                                \
    const cudaError_t fdpp_err_ = (stmt);                                             \
    if (fdpp_err_ != cudaSuccess)                                                     \
      return ::fdpp::cuda::cuda_call_status(fdpp_err_, #stmt, __FILE__, __LINE__);    \
  } while (0)
// After every kernel launch: a bad launch configuration surfaces at its launcher.
#define FDPP_KERNEL_CHECK_LAUNCH() FDPP_KERNEL_CHECK(cudaGetLastError())
