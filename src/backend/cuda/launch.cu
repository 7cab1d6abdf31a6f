// The host side of launch.h that needs the device compiler: whether this build's
// kernels carry the griddepcontrol instructions.
#include "backend/cuda/launch.h"

namespace fdpp::cuda {
namespace {

__global__ void pdl_probe_kernel() {}

}  // namespace

bool kernels_support_pdl() {
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, pdl_probe_kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  // ptxVersion, not binaryVersion: PTX of an older virtual architecture JIT-compiled for
  // this GPU runs on sm_90 but was compiled with __CUDA_ARCH__ < 900, without the waits.
  return a.ptxVersion >= 90;
}

}  // namespace fdpp::cuda
