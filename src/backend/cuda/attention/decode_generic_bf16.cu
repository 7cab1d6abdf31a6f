// One instantiation per file so the decode kernels compile in parallel (house rule 4).
#include "backend/cuda/attention/decode_generic.cuh"

namespace fdpp::cuda {
template Status launch_decode_generic<DType::kBF16, SoftmaxPolicy::kSynchronized>(
    const DecodeParams& p, KernelStream stream);
template Result<int> decode_generic_occupancy<DType::kBF16, SoftmaxPolicy::kSynchronized>();
}  // namespace fdpp::cuda
