// ImplB instantiation: configuration 2 (n64k128s4m16, dispatch/gemm_configs.h), bf16.
#include "backend/cuda/gemm/flat_gemm_kernel.cuh"

namespace fdpp::cuda {

static_assert(flat_config_named(2, "n64k128s4m16"));
template Status launch_flat_gemm<2, DType::kBF16>(const GemmParams&, KernelStream);
template Result<int> prepare_flat_gemm_config<2, DType::kBF16>();

}  // namespace fdpp::cuda
