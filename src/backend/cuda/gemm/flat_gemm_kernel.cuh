// The ImplB kernel (flat_gemm.h): included only by the flat_gemm_<config>_<dtype>.cu
// instantiation files (generated from instantiations.cmake).
//
// yᵀ[N, M] = W[N, K] · xᵀ[K, M] with mma.m16n8k16: A = 16 rows of W (row-major
// in K, as stored), B = an n8 tile of xᵀ (column-major = rows of x, as stored),
// D[n][m] = y[m][n]. One CTA: C.block_n rows of W over one K split, all M.
//
// Pipeline: a ring of C.stages shared-memory stages, each holding the W tile
// (block_n, block_k) and the x tile (8·max_m_tiles, block_k), filled by cp.async
// (.cg: no L1 allocation for data used once) stages - 1 k-blocks ahead of the
// warps' mma's. Tiles are stored with 16-byte chunk c of row r at chunk
// c ^ (r % 8): the 8 rows an ldmatrix phase reads then sit in 8 different bank
// groups (unswizzled, a row stride that is a multiple of 128 bytes puts them all
// in the same 4 banks), and the 8 chunks a cp.async phase writes are a
// permutation of one 128-byte run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/gemm/flat_gemm.h"
#include "backend/cuda/gemm/gemm_common.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ptx.cuh"
#include "dispatch/gemm_configs.h"

namespace fdpp::cuda::gemm {

// Element offset of (row, 16-byte chunk) in a swizzled tile with kBK elements per row.
template <int kBK>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * kBK + ((chunk ^ (row & 7)) << 3);
}

template <int kConfig, class T>
__global__ void __launch_bounds__(kFlatConfigs[kConfig].threads())
    flat_gemm_kernel(const GemmParams p) {
  constexpr FlatConfigDesc C = kFlatConfigs[kConfig];
  constexpr int kBN = C.block_n, kBK = C.block_k, kStages = C.stages;
  constexpr int kMT = C.max_m_tiles, kXRows = C.x_rows();
  constexpr int kThreads = C.threads();
  constexpr int kWarpsN = C.warps_n;
  constexpr int kWarpRows = C.warp_rows(), kRowTiles = kWarpRows / 16, kWarpK = C.warp_k();
  constexpr int kChunksPerRow = kBK / 8;                // 16-byte chunks per tile row
  constexpr int kWChunks = kBN * kChunksPerRow;         // per stage, W
  constexpr int kStageElems = (kBN + kXRows) * kBK;     // per stage, W then x
  constexpr int kLd = kBN + 4;                          // reduction tile row stride (floats)
  static_assert(sizeof(T) == 2);
  static_assert(flat_config_is_valid(C));
  static_assert(kWChunks % kThreads == 0, "every thread copies the same number of W chunks");
  static_assert(kXRows * kLd * 4 <= C.smem_bytes(), "the reduction tile must fit the stages");

  extern __shared__ uint4 smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);  // (stages, [W (kBN, kBK) | x (kXRows, kBK)])

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int tile = static_cast<int>(blockIdx.x), split = static_cast<int>(blockIdx.y);
  const int n0 = tile * kBN;
  const int k0 = split * p.k_split;
  const int k_end = static_cast<int>(min(static_cast<int64_t>(p.k),
                                         static_cast<int64_t>(k0) + p.k_split));
  const int n_kb = (k_end - k0 + kBK - 1) / kBK;  // k-blocks of this split (the last may be partial)
  const int mt = p.m_tiles;                       // n8 tiles of x in use (<= kMT)
  const T* const w = static_cast<const T*>(p.w);  // (n, k)
  const T* const x = static_cast<const T*>(p.x);  // (m, k)

  // Fills ring slot `slot` with k-block kb: W, then x. Chunks past N, M or the split's
  // end are zero-filled without reading (src-size 0), so a partial tile multiplies zeros.
  auto issue_w = [&](int slot, int kb) {
    T* ws = smem + slot * kStageElems;  // (kBN, kBK)
    const int kbase = k0 + kb * kBK;
#pragma unroll
    for (int it = 0; it < kWChunks / kThreads; ++it) {
      const int i = tid + it * kThreads;
      const int r = i / kChunksPerRow, c = i % kChunksPerRow;
      const int n = n0 + r, kk = kbase + c * 8;
      const bool fill = n < p.n && kk < k_end;
      // An unfilled copy reads nothing, but its address is still formed: keep it in range.
      cp_async_16(ws + swizzled<kBK>(r, c), fill ? w + static_cast<int64_t>(n) * p.k + kk : w,
                  fill);
    }
  };
  auto issue_x = [&](int slot, int kb) {
    T* xs = smem + slot * kStageElems + kBN * kBK;  // (kXRows, kBK)
    const int kbase = k0 + kb * kBK;
    for (int i = tid; i < mt * 8 * kChunksPerRow; i += kThreads) {
      const int r = i / kChunksPerRow, c = i % kChunksPerRow;
      const int kk = kbase + c * 8;
      const bool fill = r < p.m && kk < k_end;
      cp_async_16(xs + swizzled<kBK>(r, c), fill ? x + static_cast<int64_t>(r) * p.k + kk : x,
                  fill);
    }
  };

  // Prologue: stages - 1 k-blocks in flight. W first and before the PDL wait (launch.h:
  // weights are never written, so their stream starts during the previous kernel's tail),
  // x after it. The W copies join commit group 0, so the first wait covers them all. One
  // commit group per k-block (empty past the end) keeps the wait count below uniform.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < n_kb) issue_w(s, s);
  pdl_wait();
  pdl_launch_dependents();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_kb) issue_x(s, s);
    cp_async_commit();
  }

  const int wn = warp % kWarpsN, wk = warp / kWarpsN;
  const int row_base = wn * kWarpRows;  // this warp's first W row within the tile
  float acc[kRowTiles][kMT][4];
#pragma unroll
  for (int i = 0; i < kRowTiles; ++i)
#pragma unroll
    for (int j = 0; j < kMT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // ldmatrix row addresses (lane l feeds row l % 8 of matrix l / 8):
  //  A (16 rows × k16): matrices {rows 0-7, k 0-7}, {rows 8-15, k 0-7}, {rows 0-7,
  //    k 8-15}, {rows 8-15, k 8-15} = a0, a1, a2, a3 of the mma fragment.
  //  x (8 rows × k32): matrices {k 0-7}, {k 8-15}, {k 16-23}, {k 24-31} = b0, b1 of
  //    the first k16 step, then b0, b1 of the second (B[k][m] = x[m][k]).
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_chunk = lane >> 4;
  const int x_row = lane & 7, x_chunk = lane >> 3;

  for (int kb = 0; kb < n_kb; ++kb) {
    cp_async_wait<kStages - 2>();  // this thread's copies of k-block kb have landed ...
    __syncthreads();               // ... everyone's have, and slot (kb - 1) % stages is free
    if (kb + kStages - 1 < n_kb) {
      issue_w((kb + kStages - 1) % kStages, kb + kStages - 1);
      issue_x((kb + kStages - 1) % kStages, kb + kStages - 1);
    }
    cp_async_commit();

    const T* ws = smem + (kb % kStages) * kStageElems;
    const T* xs = ws + kBN * kBK;
#pragma unroll
    for (int ks = 0; ks < kWarpK; ks += 32) {
      const int c0 = (wk * kWarpK + ks) / 8;  // first chunk of this k32 step
      uint32_t b[kMT][4];
#pragma unroll
      for (int j = 0; j < kMT; ++j)
        if (j < mt) ldmatrix_x4(b[j], xs + swizzled<kBK>(j * 8 + x_row, c0 + x_chunk));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int i = 0; i < kRowTiles; ++i) {
          uint32_t a[4];
          ldmatrix_x4(a, ws + swizzled<kBK>(row_base + i * 16 + a_row, c0 + 2 * h + a_chunk));
#pragma unroll
          for (int j = 0; j < kMT; ++j)
            if (j < mt) mma_m16n8k16<T>(acc[i][j], a, b[j][2 * h], b[j][2 * h + 1]);
        }
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain, but nothing may land in the stages below
  __syncthreads();     // every warp is done reading the stages

  // The warps_k partials of each row are summed in warp order (deterministic)
  // into red (kXRows, kLd) fp32, which reuses the stages. Fragment element e of
  // (row tile i, n8 tile j) is D[g + 8·(e / 2)][2t + e % 2] = y[m][n] with
  // m = 8j + 2t + e % 2 and n = row_base + 16i + g + 8·(e / 2): the stride
  // kLd = kBN + 4 ≡ 4 (mod 32) puts the 32 lanes' stores in 32 distinct banks.
  float* red = reinterpret_cast<float*>(smem_raw);
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int turn = 0; turn < C.warps_k; ++turn) {
    if (wk == turn) {
#pragma unroll
      for (int i = 0; i < kRowTiles; ++i)
#pragma unroll
        for (int j = 0; j < kMT; ++j) {
          if (j >= mt) continue;
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float& dst = red[(j * 8 + 2 * t + (e & 1)) * kLd + row_base + i * 16 + g + (e >> 1) * 8];
            dst = turn == 0 ? acc[i][j][e] : dst + acc[i][j][e];
          }
        }
    }
    __syncthreads();
  }
  store_tile<T, kThreads>(p, red, kLd, n0, kBN, tile, split);
}

}  // namespace fdpp::cuda::gemm

namespace fdpp::cuda {

template <int kConfig, DType kDType>
Status launch_flat_gemm(const GemmParams& p, KernelStream stream) {
  using T = typename DeviceType<kDType>::type;
  constexpr FlatConfigDesc C = kFlatConfigs[kConfig];
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n, C.block_n)), static_cast<unsigned>(p.splits));
  FDPP_KERNEL_CHECK(launch_kernel(gemm::flat_gemm_kernel<kConfig, T>, grid, C.threads(),
                                  C.smem_bytes(), stream, p));
  return Status::Ok();
}

template <int kConfig, DType kDType>
Result<int> prepare_flat_gemm_config() {
  using T = typename DeviceType<kDType>::type;
  constexpr FlatConfigDesc C = kFlatConfigs[kConfig];
  FDPP_KERNEL_CHECK(cudaFuncSetAttribute(gemm::flat_gemm_kernel<kConfig, T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         C.smem_bytes()));
  int n = 0;
  FDPP_KERNEL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &n, gemm::flat_gemm_kernel<kConfig, T>, C.threads(), C.smem_bytes()));
  return n;
}

}  // namespace fdpp::cuda
