// The score statistics pass of fdpp calibrate (score_stats.h). Each CTA takes kRowsPerCta
// query rows of one head, one warp per row at a time and one key per lane; the counts go
// to a shared-memory histogram first (a prefill call adds up to T·(start_pos+T)/2 scores
// per head, mostly into a few hundred bins: global atomics alone would serialise on them),
// then the CTA adds its non-zero bins to the global one.
#include "backend/cuda/attention/score_stats.h"

#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/numeric.cuh"
#include "dispatch/softmax_range.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerCta = 16;
constexpr int kMaxDim = 256;

// Float min/max through the integer atomics: for x >= 0 the IEEE bits order like signed
// ints, for x < 0 they order reversed like unsigned ints (the stored value may have either
// sign, including the ±inf starting values). NaN is never passed in.
__device__ void atomic_min_float(float* addr, float x) {
  if (x >= 0.f)
    atomicMin(reinterpret_cast<int*>(addr), __float_as_int(x));
  else
    atomicMax(reinterpret_cast<unsigned*>(addr), __float_as_uint(x));
}
__device__ void atomic_max_float(float* addr, float x) {
  if (x >= 0.f)
    atomicMax(reinterpret_cast<int*>(addr), __float_as_int(x));
  else
    atomicMin(reinterpret_cast<unsigned*>(addr), __float_as_uint(x));
}

// grid (ceil(T / kRowsPerCta), n_heads); dynamic shared memory: the histogram.
template <class T>
__global__ void __launch_bounds__(kThreads) score_stats_kernel(const ScoreStatsParams p) {
  extern __shared__ int hist[];                 // (kScoreBins)
  __shared__ float sq[kWarps][kMaxDim];         // (warp, head_dim): q · scale
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int head = static_cast<int>(blockIdx.y);
  const int D = p.head_dim;
  for (int i = tid; i < kScoreBins; i += kThreads) hist[i] = 0;
  __syncthreads();

  const T* kh = static_cast<const T*>(p.k) +
                static_cast<int64_t>(head / p.group) * p.capacity * D;  // (capacity, D)
  float lo = INFINITY, hi = -INFINITY;  // this lane's min and max s
  for (int r = warp; r < kRowsPerCta; r += kWarps) {
    const int t = static_cast<int>(blockIdx.x) * kRowsPerCta + r;
    if (t >= p.T) break;  // uniform per warp
    const T* q = static_cast<const T*>(p.q) + (static_cast<int64_t>(t) * p.n_heads + head) * D;
    for (int d = lane; d < D; d += 32) sq[warp][d] = to_float(q[d]) * p.scale;
    __syncwarp();
    const int n_keys = p.start_pos + t + 1;
    float row_max = -INFINITY;
    for (int j = lane; j < n_keys; j += 32) {
      const T* kr = kh + static_cast<int64_t>(j) * D;
      float s = 0.f;
      for (int d = 0; d < D; d += 2) {
        const float2 kf = unpack2<T>(*reinterpret_cast<const uint32_t*>(kr + d));
        s = fmaf(sq[warp][d], kf.x, s);
        s = fmaf(sq[warp][d + 1], kf.y, s);
      }
      atomicAdd(&hist[score_bin(s)], 1);
      row_max = fmaxf(row_max, s);
      lo = fminf(lo, s);
      hi = fmaxf(hi, s);
    }
    row_max = warp_max(row_max);
    if (lane == 0 && p.row_max != nullptr)
      p.row_max[static_cast<int64_t>(t) * p.n_heads + head] = row_max;
    __syncwarp();  // sq[warp] is rewritten for the next row
  }
  if (lo <= hi) {  // this lane saw a score
    atomic_min_float(&p.minmax[0], lo);
    atomic_max_float(&p.minmax[1], hi);
  }
  __syncthreads();
  for (int i = tid; i < kScoreBins; i += kThreads)
    if (hist[i] != 0) atomicAdd(&p.histogram[i], hist[i]);
}

}  // namespace

Status run_score_stats(const ScoreStatsParams& p, DType dtype, cudaStream_t stream) {
  if (p.T == 0) return Status::Ok();
  if (p.head_dim < 2 || p.head_dim > kMaxDim || p.head_dim % 2 != 0 || p.n_heads < 1 ||
      p.n_heads > 65535 || p.group < 1 || !p.q || !p.k || !p.histogram || !p.minmax)
    return Internal("score statistics: bad parameters (head_dim " + std::to_string(p.head_dim) +
                    ", heads " + std::to_string(p.n_heads) + ")");
  constexpr size_t kSmem = kScoreBins * sizeof(int);
  const dim3 grid(static_cast<unsigned>((p.T + kRowsPerCta - 1) / kRowsPerCta),
                  static_cast<unsigned>(p.n_heads));
  switch (dtype) {
    case DType::kF16:
      FDPP_KERNEL_CHECK(cudaFuncSetAttribute(score_stats_kernel<__half>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSmem)));
      score_stats_kernel<__half><<<grid, kThreads, kSmem, stream>>>(p);
      break;
    case DType::kBF16:
      FDPP_KERNEL_CHECK(cudaFuncSetAttribute(score_stats_kernel<__nv_bfloat16>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSmem)));
      score_stats_kernel<__nv_bfloat16><<<grid, kThreads, kSmem, stream>>>(p);
      break;
    default: return Unsupported("score statistics: f16 or bf16 only");
  }
  FDPP_KERNEL_CHECK_LAUNCH();
  return Status::Ok();
}

}  // namespace fdpp::cuda
