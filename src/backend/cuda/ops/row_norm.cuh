// What RMSNorm and LayerNorm share: one row per warp for narrow rows (no block
// barrier), one row per CTA for wide ones, and the launch shape that goes with it.
// Included by ops/rmsnorm.cu and ops/layernorm.cu only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "fdpp/status.h"

namespace fdpp::cuda::row_norm {

constexpr int kRowThreads = 256;    // CTA per row: wide rows (hidden > kMaxWarpRowHidden)
constexpr int kWarpRowsPerCta = 4;  // warp per row: narrow rows, no block barrier
constexpr int kMaxWarpRowHidden = 1024;

constexpr int threads_per_cta(bool warp_per_row) {
  return warp_per_row ? 32 * kWarpRowsPerCta : kRowThreads;
}

// This thread's row and its place in the row's strided loops. Warp per row: whole
// warps of rows past the end leave (no block barrier follows); CTA per row: the grid
// has exactly `rows` CTAs, so nobody leaves.
struct RowThread {
  int64_t row;
  int lane;    // first vector this thread handles
  int stride;  // vectors between this thread's consecutive ones
};
template <bool kWarpPerRow>
__device__ __forceinline__ RowThread row_thread() {
  if constexpr (kWarpPerRow)
    return {static_cast<int64_t>(blockIdx.x) * kWarpRowsPerCta + threadIdx.x / 32,
            static_cast<int>(threadIdx.x % 32), 32};
  else
    return {static_cast<int64_t>(blockIdx.x), static_cast<int>(threadIdx.x),
            static_cast<int>(blockDim.x)};
}

// The sum of v over the row's threads, returned to all of them.
template <bool kWarpPerRow>
__device__ __forceinline__ float row_sum(float v) {
  return kWarpPerRow ? warp_sum(v) : block_sum(v);
}

struct Launch {
  bool warp_per_row = false;
  unsigned blocks = 0;
  unsigned threads = 0;
};

// The grid for `rows` rows of `hidden` elements loaded `vec` at a time.
inline Result<Launch> launch_shape(const char* op, int64_t rows, int hidden, int vec) {
  Launch l;
  l.warp_per_row = hidden <= kMaxWarpRowHidden;
  const int64_t blocks = l.warp_per_row ? (rows + kWarpRowsPerCta - 1) / kWarpRowsPerCta : rows;
  if (blocks > 0x7fffffff) return OutOfRange(std::string(op) + ": too many rows for the grid");
  l.blocks = static_cast<unsigned>(blocks);
  // CTA per row: no more threads than units of work, rounded to whole warps (block_sum
  // needs that).
  const int n_vec = hidden / vec;
  l.threads = l.warp_per_row ? threads_per_cta(true)
                             : (n_vec >= kRowThreads ? kRowThreads : (n_vec + 31) / 32 * 32);
  return l;
}

// Launches a row op for p.rows rows of p.hidden elements loaded `vec` at a time: the
// warp-per-row instantiation for narrow rows, the CTA-per-row one for wide ones.
template <class Params>
Status launch_rows(const char* op, void (*warp_per_row)(Params), void (*cta_per_row)(Params),
                   int vec, const Params& p, KernelStream stream) {
  FDPP_ASSIGN_OR_RETURN(const Launch l, launch_shape(op, p.rows, p.hidden, vec));
  FDPP_KERNEL_CHECK(launch_kernel(l.warp_per_row ? warp_per_row : cta_per_row, l.blocks,
                                  l.threads, 0, stream, p));
  return Status::Ok();
}

}  // namespace fdpp::cuda::row_norm
