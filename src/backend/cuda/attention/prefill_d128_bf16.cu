// One instantiation per file so the kernels compile in parallel (house rule 4).
#include "backend/cuda/attention/prefill_kernel.cuh"

namespace fdpp::cuda {
template Status launch_prefill_mma<DType::kBF16, 128, SoftmaxPolicy::kSynchronized>(
    const PrefillParams& p, cudaStream_t stream);
}  // namespace fdpp::cuda
