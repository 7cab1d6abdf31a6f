// Device-side numeric helpers shared by the CUDA kernels: the DType → element
// type map, fp16/bf16 ↔ fp32 conversion (round to nearest even, as core/half.h
// does on the host), 16-byte packing and warp reductions (cp.async: ptx.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/ptx.cuh"
#include "core/dtype.h"

// cp.async (and the bf16 conversions) need Ampere; CI builds sm_80 and sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "fdpp's CUDA kernels need sm_80 or newer"
#endif

namespace fdpp::cuda {

template <DType>
struct DeviceType;
template <>
struct DeviceType<DType::kF16> {
  using type = __half;
};
template <>
struct DeviceType<DType::kBF16> {
  using type = __nv_bfloat16;
};
template <>
struct DeviceType<DType::kF32> {
  using type = float;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// x rounded to T and widened again: the places where a plain half-precision
// implementation (Hugging Face eager) stores an intermediate in T.
template <class T>
__device__ __forceinline__ float round_through(float x) {
  return to_float(from_float<T>(x));
}

// Two 16-bit elements in one 32-bit word (the lower address in the low half).
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t w);
template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t w) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(w));
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t w) {
  __nv_bfloat162 h;
  static_assert(sizeof(h) == sizeof(w));
  memcpy(&h, &w, sizeof(w));
  return __bfloat1622float2(h);
}

template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}

// Eight 16-bit elements in one 16-byte word ↔ eight floats.
template <class T>
__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8]) {
  static_assert(sizeof(T) == 2, "unpack8 takes 16-bit elements");
  const float2 a = unpack2<T>(u.x), b = unpack2<T>(u.y), c = unpack2<T>(u.z), d = unpack2<T>(u.w);
  f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y, f[4] = c.x, f[5] = c.y, f[6] = d.x, f[7] = d.y;
}
template <class T>
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  static_assert(sizeof(T) == 2, "pack8 takes 16-bit elements");
  return make_uint4(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]), pack2<T>(f[4], f[5]),
                    pack2<T>(f[6], f[7]));
}

// kVec consecutive elements ↔ floats: one 16-byte access for 8 16-bit elements
// (p 16-byte aligned), element by element otherwise.
template <class T, int kVec>
__device__ __forceinline__ void load_vec(const T* p, float (&f)[kVec]) {
  if constexpr (kVec == 8 && sizeof(T) == 2) {
    unpack8<T>(*reinterpret_cast<const uint4*>(p), f);
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) f[i] = to_float(p[i]);
  }
}
template <class T, int kVec>
__device__ __forceinline__ void store_vec(T* p, const float (&f)[kVec]) {
  if constexpr (kVec == 8 && sizeof(T) == 2) {
    *reinterpret_cast<uint4*>(p) = pack8<T>(f);
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) p[i] = from_float<T>(f[i]);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// fmaxf drops a NaN operand, so a NaN never becomes the max.
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum over each aligned group of kWidth lanes (kWidth a power of two <= 32); every
// lane of the warp must call it (full-mask shuffles), each gets its group's sum.
template <int kWidth>
__device__ __forceinline__ float group_sum(float v) {
  static_assert(kWidth >= 1 && kWidth <= 32 && (kWidth & (kWidth - 1)) == 0);
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the whole CTA (blockDim.x a multiple of 32, <= 1024); every thread
// gets the total. Uses one 32-float shared array; call it once per kernel.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < n_warps ? partial[lane] : 0.f;
    v = warp_sum(v);  // every lane of warp 0 has read partial[] before lane 0 overwrites it
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace fdpp::cuda
