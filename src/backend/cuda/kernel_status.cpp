#include "backend/cuda/kernel_status.h"

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {

Status cuda_call_status(cudaError_t err, const char* stmt, const char* file, int line) {
  return cuda_status(err, stmt, file, line);
}

}  // namespace fdpp::cuda
