// Greedy sampling: ids[b] = the lowest v with logits[b, v] maximal. NaN never
// wins (an all-NaN row gives 0, like the CPU reference); ±inf are ordinary values.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kNone = INT_MAX;  // "no candidate yet": loses every tie on the index

// (v, i) beats (bv, bi): a strict order, so every lane of a butterfly reduction
// ends with the same winner whatever the pairing. bv is NaN exactly while bi is kNone.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
  if (isnan(v)) return false;
  if (isnan(bv)) return true;
  return v > bv || (v == bv && i < bi);
}

// One CTA per row. Each thread scans its elements in increasing index order,
// then the CTA reduces (value, index) pairs: shuffles within warps, shared
// memory across them.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) argmax_kernel(const ArgmaxParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  __shared__ float s_v[kThreads / 32];
  __shared__ int s_i[kThreads / 32];
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(p.logits) + row * p.vocab;  // (vocab)
  const int n_vec = static_cast<int>(p.vocab / kVec);
  float bv = __int_as_float(0x7fc00000);  // NaN
  int bi = kNone;
  for (int i = threadIdx.x; i < n_vec; i += kThreads) {
    float f[kVec];
    load_vec<T, kVec>(x + static_cast<int64_t>(i) * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (better(f[e], i * kVec + e, bv, bi)) bv = f[e], bi = i * kVec + e;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) s_v[warp] = bv, s_i[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    bv = lane < kThreads / 32 ? s_v[lane] : __int_as_float(0x7fc00000);
    bi = lane < kThreads / 32 ? s_i[lane] : kNone;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (lane == 0) p.ids[row] = bi == kNone ? 0 : bi;
  }
}

template <class T, int kVec>
Status launch(const ArgmaxParams& p, KernelStream stream) {
  FDPP_KERNEL_CHECK(
      launch_kernel(argmax_kernel<T, kVec>, static_cast<unsigned>(p.rows), kThreads, 0, stream, p));
  return Status::Ok();
}

template <class T>
Status dispatch(const ArgmaxParams& p, KernelStream stream) {
  if constexpr (sizeof(T) == 2) {  // 16-byte loads of 8 elements; f32 rows stay scalar
    if (p.vocab % 8 == 0 && reinterpret_cast<uintptr_t>(p.logits) % 16 == 0)
      return launch<T, 8>(p, stream);
  }
  return launch<T, 1>(p, stream);
}

}  // namespace

Status run_argmax(const ArgmaxParams& p, DType logits_dtype, KernelStream stream) {
  if (p.rows <= 0) return Status::Ok();
  if (p.vocab <= 0 || p.vocab > INT_MAX - 8)
    return InvalidArgument("argmax: vocab " + std::to_string(p.vocab) + " outside [1, 2^31 - 9]");
  if (p.rows > 0x7fffffff) return OutOfRange("argmax: too many rows for the grid");
  switch (logits_dtype) {
    case DType::kF16: return dispatch<__half>(p, stream);
    case DType::kBF16: return dispatch<__nv_bfloat16>(p, stream);
    case DType::kF32: return dispatch<float>(p, stream);
    default: break;
  }
  return Unsupported(std::string("argmax: dtype ") + dtype_name(logits_dtype));
}

}  // namespace fdpp::cuda
