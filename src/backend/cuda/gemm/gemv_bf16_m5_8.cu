// ImplA instantiations: bf16, M = 5..8 (a dtype and half the M range per file, so
// builds parallelize).
#include "backend/cuda/gemm/gemv_kernel.cuh"

namespace fdpp::cuda {

template Status launch_gemv<DType::kBF16, 5>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kBF16, 5>();
template Status launch_gemv<DType::kBF16, 6>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kBF16, 6>();
template Status launch_gemv<DType::kBF16, 7>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kBF16, 7>();
template Status launch_gemv<DType::kBF16, 8>(const GemmParams&, KernelStream);
template Result<int> gemv_occupancy<DType::kBF16, 8>();

}  // namespace fdpp::cuda
