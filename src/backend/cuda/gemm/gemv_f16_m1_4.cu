// ImplA instantiations: f16, M = 1..4 (a dtype and half the M range per file, so
// builds parallelize).
#include "backend/cuda/gemm/gemv_kernel.cuh"

namespace fdpp::cuda {

template Status launch_gemv<DType::kF16, 1>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kF16, 1>();
template Status launch_gemv<DType::kF16, 2>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kF16, 2>();
template Status launch_gemv<DType::kF16, 3>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kF16, 3>();
template Status launch_gemv<DType::kF16, 4>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kF16, 4>();

}  // namespace fdpp::cuda
