// The ImplA kernel (gemv.h): included only by the gemv_<dtype>_m*.cu
// instantiation files (generated from instantiations.cmake).
//
// Work of one CTA: W rows [n0, n0 + 16) over K range [k0, k0 + k_len) (its
// split). Warp w owns rows n0 + 4w .. n0 + 4w + 3; lane l reads the 16-byte
// chunks l, l + 32, l + 64, ... of each of its rows, so one warp load
// instruction covers 512 contiguous bytes of one row (fully coalesced), and a
// round issues kR × kU independent loads per lane before any is used.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/gemm/gemm_common.cuh"
#include "backend/cuda/gemm/gemv.h"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/norm_gate_math.cuh"
#include "dispatch/gemm_configs.h"

namespace fdpp::cuda::gemm {

constexpr int kGemvThreads = GemvConfig::kWarps * 32;

// Stages this split's slice of x into xs as (kM, chunks) 16-byte chunks: chunk c of
// row m holds elements k0 + 8c .. k0 + 8c + 7 of
//  * kNone: x;
//  * kSiluMul: T(silu(gate)) · up, rounded to T (ops/norm_gate_math.cuh), the x the
//    separate op would have written;
//  * kRmsNorm: T(x · norm_weight), with the row's 1/rms left out: it is a per-row
//    constant, applied to the finished dot product (store_tile's row_scale) rather
//    than to every element, so no CTA waits on a row reduction before its main loop.
// Every thread of the CTA calls it; xs is complete after the caller's barrier.
// ss[m] receives this thread's share of row m's sum of squares (kRmsNorm only).
template <class T, int kM>
__device__ __forceinline__ void stage_x(const GemmParams& p, int k0, int chunks, uint4* xs,
                                        float (&ss)[kM]) {
  const int tid = static_cast<int>(threadIdx.x);
  const uint4* xg = static_cast<const uint4*>(p.x);
  const int c0 = k0 / 8;         // the slice's first chunk within a row of x
  const int k_chunks = p.k / 8;  // chunks per row of the GEMM's x
  switch (p.prologue) {
    case GemvPrologue::kNone:
#pragma unroll 4
      for (int i = tid; i < kM * chunks; i += kGemvThreads) {
        const int m = i / chunks;
        xs[i] = __ldg(xg + static_cast<int64_t>(m) * k_chunks + c0 + (i - m * chunks));
      }
      return;
    case GemvPrologue::kSiluMul:  // x is (m, 2k): gate, then up
#pragma unroll 4
      for (int i = tid; i < kM * chunks; i += kGemvThreads) {
        const int m = i / chunks, c = c0 + (i - m * chunks);
        const uint4* row = xg + static_cast<int64_t>(m) * 2 * k_chunks;
        float g[8], u[8];
        unpack8<T>(__ldg(row + c), g);
        unpack8<T>(__ldg(row + k_chunks + c), u);
#pragma unroll
        for (int e = 0; e < 8; ++e) g[e] = silu_gated<T>(g[e], u[e]);
        xs[i] = pack8<T>(g);
      }
      return;
    case GemvPrologue::kRmsNorm: {
      // The whole row, not only this split's slice, in the same thread order in every
      // CTA: each computes the same sum bit for bit, so the split-K result does not
      // depend on which CTA finishes it. With one split the slice is the row.
      // Chunk-major, so the norm weight is read once per chunk and only where this CTA
      // stages it (row-major read it M times, in every chunk): at M rows the loop reads
      // (M + 1)·K elements instead of 2·M·K. Per row the sum still runs over c in the
      // same order, so the result is bit-identical.
      const uint4* wg = static_cast<const uint4*>(p.norm_weight);
      // Unrolled with unconditional x loads, so ~4 of a thread's loads are in flight
      // together (the main loop waits on this staging) without spilling.
      constexpr int kUnroll = kM >= 4 ? 1 : 4 / kM;
#pragma unroll kUnroll
      for (int c = tid; c < k_chunks; c += kGemvThreads) {
        const bool mine = c >= c0 && c < c0 + chunks;
        float g[8];
        unpack8<T>(mine ? __ldg(wg + c) : make_uint4(0, 0, 0, 0), g);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          float f[8];
          unpack8<T>(__ldg(xg + static_cast<int64_t>(m) * k_chunks + c), f);
#pragma unroll
          for (int e = 0; e < 8; ++e) ss[m] = fmaf(f[e], f[e], ss[m]);
          if (mine) {
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] *= g[e];
            xs[m * chunks + (c - c0)] = pack8<T>(f);
          }
        }
      }
      return;
    }
  }
}

// Four CTAs per SM: the kernel fits 128 registers without spilling (ptxas, sm_90), so 16
// warps per SM each keep kR × kU loads in flight (128 KB per SM at M <= 4). Three CTAs per
// SM (134 registers) ran the batch-1 decode step slower, with the rolling refill below
// (docs/experiments/log.md, "gemv_kernel.cuh: four CTAs per SM").
template <class T, int kM>
__global__ void __launch_bounds__(kGemvThreads, 4) gemv_kernel(const GemmParams p) {
  constexpr int kR = GemvConfig::kRowsPerWarp;
  constexpr int kU = GemvConfig::chunks_per_lane(kM);
  constexpr int kRows = GemvConfig::kRowsPerCta;
  static_assert(sizeof(T) == 2 && kM >= 1 && kM <= GemvConfig::kMaxM);

  extern __shared__ uint4 xs[];    // (kM, chunks): the CTA's x slice in 16-byte chunks
  __shared__ float red[kM * kRows];  // (kM, kRows): the CTA's finished dot products

  const int tile = static_cast<int>(blockIdx.x), split = static_cast<int>(blockIdx.y);
  const int n0 = tile * kRows;
  const int k0 = split * p.k_split;
  const int chunks = min(p.k_split, p.k - k0) / 8;  // 16-byte chunks per row in this split
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;

  // This warp's rows; rows past N read nothing and are never stored.
  const uint4* wrow[kR];  // (chunks) each: row n's slice of the split
  bool row_ok[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const int n = n0 + warp * kR + r;
    row_ok[r] = n < p.n;
    wrow[r] = reinterpret_cast<const uint4*>(static_cast<const T*>(p.w) +
                                             static_cast<int64_t>(row_ok[r] ? n : 0) * p.k + k0);
  }
  uint4 wv[kR][kU];  // kR × kU independent 16-byte loads in flight
  // Slot u of every row gets chunk c (zero past the split's end).
  auto load_slot = [&](int u, int c) {
#pragma unroll
    for (int r = 0; r < kR; ++r)
      // ld.global.cs: W is read exactly once, so it is streamed (evict-first)
      // and does not push x, y and the split-K partials out of L2.
      wv[r][u] = row_ok[r] && c < chunks ? __ldcs(wrow[r] + c) : make_uint4(0, 0, 0, 0);
  };

  // The first round is issued before x is staged, so the two latencies overlap.
  // Under PDL (launch.h) it is also issued before the previous kernel has
  // finished: W is never written, so its stream starts during that kernel's tail.
#pragma unroll
  for (int u = 0; u < kU; ++u) load_slot(u, u * 32 + lane);
  pdl_wait();
  pdl_launch_dependents();
  float ss[kM];  // kRmsNorm: this thread's share of each row's sum of squares
#pragma unroll
  for (int m = 0; m < kM; ++m) ss[m] = 0.f;
  stage_x<T, kM>(p, k0, chunks, xs, ss);
  __syncthreads();

  float acc[kR][kM];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kM; ++m) acc[r][m] = 0.f;

  // Rolling refill: as soon as slot u of every row is consumed it is reloaded with the
  // next round's chunk, so a warp keeps ~kR × kU loads in flight through the whole
  // stream instead of draining to none at the end of each round and waiting a full
  // memory latency for the next (same registers, no extra ones).
  for (int c0 = 0; c0 < chunks; c0 += 32 * kU) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int c = c0 + u * 32 + lane;
      if (c < chunks) {
        // Lanes read consecutive 16-byte chunks of a row of xs: conflict-free.
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          float xf[8];
          unpack8<T>(xs[m * chunks + c], xf);
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            float wf[8];
            unpack8<T>(wv[r][u], wf);
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[r][m] = fmaf(wf[e], xf[e], acc[r][m]);
          }
        }
      }
      load_slot(u, c + 32 * kU);
    }
  }

#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      const float v = warp_sum(acc[r][m]);
      if (lane == 0) red[m * kRows + warp * kR + r] = v;
    }
  if (p.prologue != GemvPrologue::kRmsNorm) {
    __syncthreads();
    store_tile<T, kGemvThreads>(p, red, kRows, n0, kRows, tile, split);
    return;
  }
  // RMSNorm: y = (1/rms) · Σ_k W·T(x·weight); the row sums meet here, after the stream.
  __shared__ float warp_ss[GemvConfig::kWarps][kM];
  __shared__ float inv_rms[kM];
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    const float v = warp_sum(ss[m]);
    if (lane == 0) warp_ss[warp][m] = v;
  }
  __syncthreads();
  if (threadIdx.x < kM) {
    float t = 0.f;
#pragma unroll
    for (int w = 0; w < GemvConfig::kWarps; ++w) t += warp_ss[w][threadIdx.x];
    inv_rms[threadIdx.x] = rms_inverse(t, p.k, p.norm_eps);
  }
  __syncthreads();
  store_tile<T, kGemvThreads>(p, red, kRows, n0, kRows, tile, split, inv_rms);
}

}  // namespace fdpp::cuda::gemm

namespace fdpp::cuda {

template <DType kDType, int kM>
Status launch_gemv(const GemmParams& p, KernelStream stream) {
  using T = typename DeviceType<kDType>::type;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n, GemvConfig::kRowsPerCta)),
                  static_cast<unsigned>(p.splits));
  const size_t smem = static_cast<size_t>(kM) * p.k_split * sizeof(T);  // x slice (kM, k_split)
  FDPP_KERNEL_CHECK(
      launch_kernel(gemm::gemv_kernel<T, kM>, grid, gemm::kGemvThreads, smem, stream, p));
  return Status::Ok();
}

template <DType kDType, int kM>
Result<int> gemv_occupancy() {
  using T = typename DeviceType<kDType>::type;
  int n = 0;
  FDPP_KERNEL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &n, gemm::gemv_kernel<T, kM>, gemm::kGemvThreads, GemvConfig::kMaxXBytes));
  return n;
}

}  // namespace fdpp::cuda
