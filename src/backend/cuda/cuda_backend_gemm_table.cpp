// CudaBackend's GEMM table side of the op contract: installing a table on the dispatcher
// and timing the implementations it chooses between (bench/gemm_timing.h).
#include "backend/cuda/bench/gemm_timing.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "dispatch/gemm_table.h"

namespace fdpp::cuda {

Status CudaBackend::set_gemm_table(std::shared_ptr<const TunedGemmTable> table) {
  gemm_dispatcher().set_table(std::move(table));
  return Status::Ok();
}

Result<GpuIdentity> CudaBackend::gpu_identity() const { return cuda::gpu_identity(*this); }

Result<std::vector<GemmTiming>> CudaBackend::time_gemms(const GemmTimingRequest& request,
                                                        const GemmTimingProgress& progress) {
  return cuda::time_gemms(*this, request, progress);
}

}  // namespace fdpp::cuda
