// Elementwise activation of a plain MLP: out = T(act(x)), act in fp32 (relu exact;
// gelu 0.5·x·(1 + erf(x/√2)), torch's default exact form). out may alias x.
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

template <Activation kAct>
__device__ __forceinline__ float act(float x) {
  if constexpr (kAct == Activation::kRelu) {
    return x < 0.f ? 0.f : x;  // NaN stays NaN, as in torch.relu
  } else {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
}

template <class T, int kVec, Activation kAct>
__global__ void __launch_bounds__(kThreads) activation_kernel(const ActivationParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const int64_t units = p.n / kVec;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < units;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    float f[kVec];
    load_vec<T, kVec>(static_cast<const T*>(p.x) + i * kVec, f);
#pragma unroll
    for (int e = 0; e < kVec; ++e) f[e] = act<kAct>(f[e]);
    store_vec<T, kVec>(static_cast<T*>(p.out) + i * kVec, f);
  }
}

template <class T, int kVec, Activation kAct>
Status launch(const ActivationParams& p, KernelStream stream) {
  const int64_t units = p.n / kVec;
  const int64_t blocks = std::min<int64_t>((units + kThreads - 1) / kThreads, kMaxBlocks);
  FDPP_KERNEL_CHECK(launch_kernel(activation_kernel<T, kVec, kAct>, static_cast<unsigned>(blocks),
                                  kThreads, 0, stream, p));
  return Status::Ok();
}

template <class T, Activation kAct>
Status dispatch(const ActivationParams& p, KernelStream stream) {
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.n % 8 == 0 && addr(p.x) % 16 == 0 && addr(p.out) % 16 == 0;
  return vec ? launch<T, 8, kAct>(p, stream) : launch<T, 1, kAct>(p, stream);
}

template <class T>
Status dispatch_kind(const ActivationParams& p, KernelStream stream) {
  switch (p.kind) {
    case Activation::kRelu: return dispatch<T, Activation::kRelu>(p, stream);
    case Activation::kGelu: return dispatch<T, Activation::kGelu>(p, stream);
  }
  return InvalidArgument("activation: unknown kind " + std::to_string(static_cast<int>(p.kind)));
}

}  // namespace

Status run_activation(const ActivationParams& p, DType dtype, KernelStream stream) {
  if (p.n <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return dispatch_kind<__half>(p, stream);
    case DType::kBF16: return dispatch_kind<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("activation: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
