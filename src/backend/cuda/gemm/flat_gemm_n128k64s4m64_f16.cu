// ImplB instantiation: configuration 4 (n128k64s4m64, dispatch/gemm_configs.h), f16.
#include "backend/cuda/gemm/flat_gemm_kernel.cuh"

namespace fdpp::cuda {

static_assert(flat_config_named(4, "n128k64s4m64"));
template Status launch_flat_gemm<4, DType::kF16>(const GemmParams&, KernelStream);
template Result<int> prepare_flat_gemm_config<4, DType::kF16>();

}  // namespace fdpp::cuda
