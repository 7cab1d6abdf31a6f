// Bias added to every row of a linear layer's output: y[m, :] = T(y[m, :] + bias), the
// fallback for a GEMM whose epilogue cannot take the bias (cuBLASLt without an
// algorithm for that combination, or a bias pointer below 16-byte alignment).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;  // grid-stride beyond this

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) bias_add_kernel(const BiasAddParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const int64_t per_row = p.cols / kVec;
  const int64_t total = p.rows * per_row;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t m = i / per_row, c = (i % per_row) * kVec;
    T* y = static_cast<T*>(p.y) + m * p.cols + c;  // (kVec)
    float a[kVec], b[kVec];
    load_vec<T, kVec>(y, a);
    load_vec<T, kVec>(static_cast<const T*>(p.bias) + c, b);
#pragma unroll
    for (int e = 0; e < kVec; ++e) a[e] += b[e];
    store_vec<T, kVec>(y, a);
  }
}

template <class T, int kVec>
Status launch(const BiasAddParams& p, KernelStream stream) {
  const int64_t total = p.rows * (p.cols / kVec);
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, kMaxBlocks);
  FDPP_KERNEL_CHECK(launch_kernel(bias_add_kernel<T, kVec>, static_cast<unsigned>(blocks), kThreads,
                                  0, stream, p));
  return Status::Ok();
}

template <class T>
Status dispatch(const BiasAddParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.cols % 8 == 0 && addr(p.y) % 16 == 0 && addr(p.bias) % 16 == 0;
  return vec ? launch<T, 8>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace

Status run_bias_add(const BiasAddParams& p, DType dtype, KernelStream stream) {
  if (p.rows <= 0 || p.cols <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("bias_add: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
