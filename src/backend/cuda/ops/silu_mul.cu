// SiLU-gated product: out[m, f] = T(T(silu(gate[m, f])) · up[m, f]), with
// gate|up the two halves of each gate_up row. The two roundings are Hugging
// Face's `act_fn(gate) * up` in half precision (silu computed in fp32 and
// stored, then a 16-bit multiply, which fp32 reproduces exactly before rounding).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/norm_gate_math.cuh"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;  // grid-stride beyond this

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) silu_mul_kernel(const SiluMulParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const int64_t per_row = p.ffn / kVec;
  const int64_t total = p.rows * per_row;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t m = i / per_row, f = (i % per_row) * kVec;
    const T* gate = static_cast<const T*>(p.gate_up) + m * 2 * p.ffn + f;  // (kVec)
    const T* up = gate + p.ffn;                                            // (kVec)
    float g[kVec], u[kVec];
    load_vec<T, kVec>(gate, g);
    load_vec<T, kVec>(up, u);
#pragma unroll
    for (int e = 0; e < kVec; ++e) g[e] = silu_gated<T>(g[e], u[e]);
    store_vec<T, kVec>(static_cast<T*>(p.out) + m * p.ffn + f, g);
  }
}

template <class T, int kVec>
Status launch(const SiluMulParams& p, KernelStream stream) {
  const int64_t total = p.rows * (p.ffn / kVec);
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, kMaxBlocks);
  FDPP_KERNEL_CHECK(launch_kernel(silu_mul_kernel<T, kVec>, static_cast<unsigned>(blocks), kThreads,
                                  0, stream, p));
  return Status::Ok();
}

template <class T>
Status dispatch(const SiluMulParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  // ffn % 8 keeps both halves of every row 16-byte aligned.
  const bool vec = p.ffn % 8 == 0 && addr(p.gate_up) % 16 == 0 && addr(p.out) % 16 == 0;
  return vec ? launch<T, 8>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace

Status run_silu_mul(const SiluMulParams& p, DType dtype, KernelStream stream) {
  if (p.rows <= 0 || p.ffn <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("silu_mul: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
