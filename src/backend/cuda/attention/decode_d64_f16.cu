// One instantiation per file so the decode kernels compile in parallel (house rule 4).
#include "backend/cuda/attention/decode_kernel.cuh"

namespace fdpp::cuda {
template Status launch_decode_split<DType::kF16, 64, SoftmaxPolicy::kSynchronized>(
    const DecodeParams& p, KernelStream stream);
template Result<int> decode_split_occupancy<DType::kF16, 64, SoftmaxPolicy::kSynchronized>();
}  // namespace fdpp::cuda
