// Merges the split partials of decode attention into the output:
//   out = Σ_s 2^(m_s - m*)·acc_s / Σ_s 2^(m_s - m*)·l_s,  m* = max over non-empty splits,
// which is the exact softmax over all keys because each partial is relative to
// its own max m_s (decode.h). Empty splits (l_s == 0, acc_s unwritten) are
// skipped explicitly: their weight would be 2^-inf = 0, but 0 · (stale NaN) is NaN.
// The weights and the sum: combine_common.cuh (written for latency).
#include <cuda_runtime.h>

#include <cstdint>

#include <string>

#include "backend/cuda/attention/combine_common.cuh"
#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/softmax_state.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda {
namespace {

constexpr int kMaxThreads = 256;  // one thread per output dim (head_dim <= 256)

// One CTA per row (sequence, query head); grid (batch · n_heads).
template <class T>
__global__ void __launch_bounds__(kMaxThreads) combine_kernel(const DecodeParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  __shared__ decode::SplitWeights sw;

  const int64_t row = blockIdx.x;  // b · n_heads + h
  const int S = p.num_splits, D = p.head_dim;
  const float* pacc = p.part_acc + row * S * D;  // (S, D)
  decode::stage_split_weights</*kRescale=*/true>(p.part_m + row * S, p.part_l + row * S, S, sw);
  const float den = sw.den;
  T* out = static_cast<T*>(p.out) + row * D;  // (D)
  for (int d = static_cast<int>(threadIdx.x); d < D; d += static_cast<int>(blockDim.x)) {
    const float o = decode::weighted_split_sum(pacc, S, D, d, sw);
    // den == 0 only when every split is empty (length 0): attention over nothing is 0.
    out[d] = from_float<T>(softmax_normalize(o, den));
  }
}

}  // namespace

Status launch_decode_combine(const DecodeParams& p, DType dtype, KernelStream stream) {
  if (p.num_splits < 2 || p.num_splits > kDecodeMaxSplits)
    return Internal("decode combine: " + std::to_string(p.num_splits) + " splits outside [2, " +
                    std::to_string(kDecodeMaxSplits) + "]");
  if (p.head_dim < 1 || p.head_dim > kMaxThreads)
    return Internal("decode combine: head_dim " + std::to_string(p.head_dim) + " outside [1, " +
                    std::to_string(kMaxThreads) + "]");
  const int64_t rows = static_cast<int64_t>(p.batch) * p.n_heads;
  if (rows == 0) return Status::Ok();
  if (rows > 0x7fffffff)
    return OutOfRange("decode combine: " + std::to_string(rows) + " rows exceed the grid");
  const int threads = (p.head_dim + 31) / 32 * 32;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kF16:
      FDPP_KERNEL_CHECK(launch_kernel(combine_kernel<__half>, grid, threads, 0, stream, p));
      break;
    case DType::kBF16:
      FDPP_KERNEL_CHECK(launch_kernel(combine_kernel<__nv_bfloat16>, grid, threads, 0, stream, p));
      break;
    default:
      return Unsupported(std::string("decode combine: dtype ") + dtype_name(dtype));
  }
  return Status::Ok();
}

}  // namespace fdpp::cuda
