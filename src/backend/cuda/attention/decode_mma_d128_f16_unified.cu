// One instantiation per file so the decode kernels compile in parallel (house rule 4).
#include "backend/cuda/attention/decode_mma_kernel.cuh"

namespace fdpp::cuda {
template Status launch_decode_mma<DType::kF16, 128, SoftmaxPolicy::kUnifiedMax, false>(
    const DecodeParams& p, KernelStream stream);
}  // namespace fdpp::cuda
