// One instantiation per file so the decode kernels compile in parallel (house rule 4).
// The wide-tile variant (8 KB warp tiles; split_plan.h, decode_mma_wide_tiles).
#include "backend/cuda/attention/decode_mma_kernel.cuh"

namespace fdpp::cuda {
template Status launch_decode_mma<DType::kBF16, 128, SoftmaxPolicy::kSynchronized, true>(
    const DecodeParams& p, KernelStream stream);
}  // namespace fdpp::cuda
