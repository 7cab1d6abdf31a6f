// The ImplA kernel (gemv.h): included only by the gemv_<dtype>_m*.cu
// instantiation files.
//
// Work of one CTA: W rows [n0, n0 + 16) over K range [k0, k0 + k_len) (its
// split; under the RoPE epilogue the 16 rows are 8 pairs instead, gemv_row). Warp w
// owns local rows 4w .. 4w + 3; lane l reads the 16-byte
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
#include "backend/gemm_configs.h"

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
      const uint4* wg = static_cast<const uint4*>(p.norm_weight);
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        const uint4* row = xg + static_cast<int64_t>(m) * k_chunks;
        // Unrolled with unconditional loads, so a thread's loads are all in flight
        // together: the main loop waits on this staging.
#pragma unroll 4
        for (int c = tid; c < k_chunks; c += kGemvThreads) {
          const bool mine = c >= c0 && c < c0 + chunks;
          const uint4 xv = __ldg(row + c);
          const uint4 gv = __ldg(wg + c);
          float f[8], g[8];
          unpack8<T>(xv, f);
#pragma unroll
          for (int e = 0; e < 8; ++e) ss[m] = fmaf(f[e], f[e], ss[m]);
          if (mine) {
            unpack8<T>(gv, g);
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

// The two dims of pair `pr` (0 <= pr < head_dim / 2) of a head, enumerated as
// ops/rope_append_kv.cu does: rotated pairs first (rotate-half (pr, pr + rotary_dim/2) or
// interleaved (2pr, 2pr + 1)), then the pass-through dims past rotary_dim two by two.
__device__ __forceinline__ int2 rope_pair_dims(const GemvRopeAppend& r, int pr) {
  const int rot_half = r.rotary_dim / 2;
  if (pr >= rot_half) {
    const int j = r.rotary_dim + 2 * (pr - rot_half);
    return make_int2(j, j + 1);
  }
  return r.interleaved ? make_int2(2 * pr, 2 * pr + 1) : make_int2(pr, pr + rot_half);
}

// Row of W (and of y) that local row l (0 .. kRowsPerCta - 1) of tile `tile` computes,
// or -1 past the end. Plainly tile · kRowsPerCta + l; under the RoPE epilogue the CTA takes
// eight whole pairs, P = 8 · tile + l % 8 over all heads' pairs, l < 8 its first dims.
__device__ __forceinline__ int gemv_row(const GemmParams& p, int tile, int l) {
  constexpr int kPairs = GemvConfig::kRowsPerCta / 2;
  if (!p.rope) {
    const int n = tile * GemvConfig::kRowsPerCta + l;
    return n < p.n ? n : -1;
  }
  const int half = p.rope_append.head_dim / 2;
  const int pair = tile * kPairs + l % kPairs;
  if (pair >= p.n / 2) return -1;
  const int head = pair / half;
  const int2 d = rope_pair_dims(p.rope_append, pair - head * half);
  return head * p.rope_append.head_dim + (l < kPairs ? d.x : d.y);
}

// What the RoPE epilogue needs per (token, pair) besides the dot products: where the pair
// goes and its rotation. rope_prepare fills it once per CTA right after pdl_wait, while the
// CTA's first weight loads are in flight, so that the epilogue after the stream is only
// arithmetic and two stores: loading positions and slots and an accurate sincosf there put
// their latency on every CTA's tail (measured: no gain over the separate kernel).
template <class T>
struct RopeSlot {
  T* dst;       // the token's (head_dim) row of q_out or of the cache; null: nothing to write
  float c, s;   // cos and sin of the pair's angle
  bool rotate;  // q and k pairs below rotary_dim turn; v and the rest pass through
};

template <class T, int kM>
__device__ __forceinline__ void rope_prepare(const GemmParams& p, int tile, RopeSlot<T>* slots) {
  constexpr int kPairs = GemvConfig::kRowsPerCta / 2;
  const int i = static_cast<int>(threadIdx.x);
  if (i >= kM * kPairs) return;
  const GemvRopeAppend& r = p.rope_append;
  const int m = i / kPairs, pair = tile * kPairs + (i - m * kPairs);
  const int D = r.head_dim, half = D / 2;
  RopeSlot<T> o{nullptr, 1.f, 0.f, false};
  const int head = pair / half, pr = pair - head * half;
  const int pos = r.positions[m], slot = r.slots[m];
  if (pair >= p.n / 2) {
    // past the last pair: nothing
  } else if (head < r.n_heads) {
    o.dst = static_cast<T*>(r.q_out) + (static_cast<int64_t>(m) * r.n_heads + head) * D;
    o.rotate = pr < r.rotary_dim / 2;
  } else if (pos >= 0 && pos < r.capacity && slot >= 0 && slot < r.n_slots) {
    // (The engine validates positions and slots; this only keeps writes in bounds.)
    const bool is_k = head < r.n_heads + r.n_kv_heads;
    const int kvh = head - r.n_heads - (is_k ? 0 : r.n_kv_heads);
    const int64_t at = ((static_cast<int64_t>(slot) * r.n_kv_heads + kvh) * r.capacity + pos) * D;
    o.dst = static_cast<T*>(is_k ? r.k_cache : r.v_cache) + at;
    o.rotate = is_k && pr < r.rotary_dim / 2;
  }
  if (o.rotate) sincosf(static_cast<float>(pos) * r.inv_freq[pr], &o.s, &o.c);
  slots[i] = o;
}

// The RoPE epilogue (GemvRopeAppend): red holds the CTA's (kM, kRowsPerCta) dot products,
// local rows l and l + 8 the two dims of pair 8 · tile + l. Split-K goes through the
// partials exactly as store_tile does (indexed by the row's n, summed in split order by
// the last CTA); the rotation then follows ops/rope_append_kv.cu: bias and the RMSNorm row
// scale in fp32, one rounding to T (the y the unfused path stores), the turn by
// pos · inv_freq[pr] (accurate sincosf, in rope_prepare), one rounding.
template <class T, int kM>
__device__ __forceinline__ void rope_append_tile(const GemmParams& p, float* red, int tile,
                                                 int split, const float* row_scale,
                                                 const RopeSlot<T>* slots) {
  constexpr int kRows = GemvConfig::kRowsPerCta, kPairs = kRows / 2;
  const int tid = static_cast<int>(threadIdx.x);
  if (p.splits > 1) {
    const int64_t stride = static_cast<int64_t>(p.m) * p.n;  // one split's partials
    for (int i = tid; i < kM * kRows; i += kGemvThreads) {
      const int m = i / kRows, n = gemv_row(p, tile, i - m * kRows);
      if (n >= 0) p.partial[split * stride + static_cast<int64_t>(m) * p.n + n] = red[i];
    }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (tid == 0) last = atomicAdd(p.counters + tile, 1) == p.splits - 1;
    __syncthreads();
    if (!last) return;  // uniform across the CTA
    __threadfence();
    for (int i = tid; i < kM * kRows; i += kGemvThreads) {
      const int m = i / kRows, n = gemv_row(p, tile, i - m * kRows);
      if (n < 0) continue;
      const float* src = p.partial + static_cast<int64_t>(m) * p.n + n;
      float v = 0.f;
      for (int s = 0; s < p.splits; ++s) v += __ldcg(src + s * stride);
      red[i] = v;
    }
    if (tid == 0) p.counters[tile] = 0;  // every split has taken its ticket
    __syncthreads();
  }
  const T* bias = static_cast<const T*>(p.bias);
  const int D = p.rope_append.head_dim, half = D / 2;
  for (int i = tid; i < kM * kPairs; i += kGemvThreads) {
    const RopeSlot<T> o = slots[i];
    if (o.dst == nullptr) continue;
    const int m = i / kPairs, l = i - m * kPairs;
    const int pair = tile * kPairs + l, head = pair / half;
    const int2 d = rope_pair_dims(p.rope_append, pair - head * half);
    float a = red[m * kRows + l], b = red[m * kRows + l + kPairs];
    if (row_scale != nullptr) a *= row_scale[m], b *= row_scale[m];
    if (bias != nullptr) a += to_float(bias[head * D + d.x]), b += to_float(bias[head * D + d.y]);
    a = to_float(from_float<T>(a));
    b = to_float(from_float<T>(b));
    if (o.rotate) {
      o.dst[d.x] = from_float<T>(a * o.c - b * o.s);
      o.dst[d.y] = from_float<T>(b * o.c + a * o.s);
    } else {
      o.dst[d.x] = from_float<T>(a);
      o.dst[d.y] = from_float<T>(b);
    }
  }
}

// Four CTAs per SM: the kernel fits 128 registers without spilling (ptxas, sm_90), so 16
// warps per SM each keep kR × kU loads in flight (128 KB per SM at M <= 4). Against three
// CTAs per SM (134 registers) it ran Llama-2-7B decode at batch 1 2.5% faster (H200,
// 2026-11-30, with the rolling refill below).
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
    const int n = gemv_row(p, tile, warp * kR + r);
    row_ok[r] = n >= 0;
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
  __shared__ RopeSlot<T> rope_slots[kM * kRows / 2];
  if (p.rope) rope_prepare<T, kM>(p, tile, rope_slots);
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
  // RMSNorm: y = (1/rms) · Σ_k W·T(x·weight); the row sums meet here, after the stream.
  __shared__ float inv_rms[kM];
  const float* row_scale = nullptr;
  if (p.prologue == GemvPrologue::kRmsNorm) {
    __shared__ float warp_ss[GemvConfig::kWarps][kM];
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
    row_scale = inv_rms;
  }
  __syncthreads();
  if (p.rope)
    rope_append_tile<T, kM>(p, red, tile, split, row_scale, rope_slots);
  else
    store_tile<T, kGemvThreads>(p, red, kRows, n0, kRows, tile, split, row_scale);
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
