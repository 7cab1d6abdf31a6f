// Embedding row added to the residual stream: out[t, :] = T(out[t, :] + table[ids[t], :]),
// the fp32 sum rounded once (OPT's learned positions; transformers adds the two
// half-precision tensors, which is the same single rounding).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (token, column block); each thread adds kVec consecutive elements.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) embed_add_kernel(const EmbeddingParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t c = (static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x) * kVec;
  if (c >= p.hidden) return;
  const int32_t id = p.ids[t];
  if (id < 0 || id >= p.vocab) return;  // never read out of bounds; out stays as it was
  const T* row = static_cast<const T*>(p.table) + static_cast<int64_t>(id) * p.hidden + c;
  T* out = static_cast<T*>(p.out) + t * p.hidden + c;
  float a[kVec], e[kVec];
  load_vec<T, kVec>(out, a);
  load_vec<T, kVec>(row, e);
#pragma unroll
  for (int i = 0; i < kVec; ++i) a[i] += e[i];
  store_vec<T, kVec>(out, a);
}

template <class T, int kVec>
Status launch(const EmbeddingParams& p, KernelStream stream) {
  const int64_t col_blocks = (p.hidden / kVec + kThreads - 1) / kThreads;
  if (p.n_tokens > 0x7fffffff || col_blocks > 65535)
    return OutOfRange("embed_add: " + std::to_string(p.n_tokens) + " tokens x " +
                      std::to_string(p.hidden) + " hidden exceed the grid");
  const dim3 grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(col_blocks));
  FDPP_KERNEL_CHECK(launch_kernel(embed_add_kernel<T, kVec>, grid, kThreads, 0, stream, p));
  return Status::Ok();
}

template <class T>
Status dispatch(const EmbeddingParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.hidden % 8 == 0 && addr(p.table) % 16 == 0 && addr(p.out) % 16 == 0;
  return vec ? launch<T, 8>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace

Status run_embed_add(const EmbeddingParams& p, DType dtype, KernelStream stream) {
  if (p.n_tokens <= 0 || p.hidden <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("embed_add: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
