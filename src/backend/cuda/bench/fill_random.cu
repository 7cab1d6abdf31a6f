#include "backend/cuda/bench/fill_random.h"

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda {
namespace {

// splitmix64's finaliser: a counter-based generator, so every element is
// independent of the launch shape.
__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void fill_kernel(T* data, size_t count, float scale, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint64_t r = mix(seed + 0x9e3779b97f4a7c15ull * (i + 1));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    data[i] = from_float<T>((2.0f * u - 1.0f) * scale);
  }
}

}  // namespace

Status fill_random(void* data, size_t count, DType dtype, float scale, uint64_t seed,
                   cudaStream_t stream) {
  if (count == 0) return Status::Ok();
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(
      count / kThreads + 1 < 65536 ? count / kThreads + 1 : 65536);
  switch (dtype) {
    case DType::kF16:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(data), count, scale, seed);
      break;
    case DType::kBF16:
      fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, scale,
                                                   seed);
      break;
    default: return Unsupported("fill_random: 16-bit dtypes only");
  }
  FDPP_KERNEL_CHECK_LAUNCH();
  return Status::Ok();
}

}  // namespace fdpp::cuda
