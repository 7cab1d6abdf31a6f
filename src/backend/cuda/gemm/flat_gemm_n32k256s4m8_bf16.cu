// ImplB instantiation: configuration 1 (n32k256s4m8, dispatch/gemm_configs.h), bf16.
#include "backend/cuda/gemm/flat_gemm_kernel.cuh"

namespace fdpp::cuda {

static_assert(flat_config_named(1, "n32k256s4m8"));
template Status launch_flat_gemm<1, DType::kBF16>(const GemmParams&, KernelStream);
template Result<int> prepare_flat_gemm_config<1, DType::kBF16>();

}  // namespace fdpp::cuda
