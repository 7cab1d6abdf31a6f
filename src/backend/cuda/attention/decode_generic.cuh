// The generic split-KV decode kernel: any even head_dim <= 256 at run time
// (stories260K has 8), and the fallback for pointers the fast kernel's 16-byte
// loads cannot take. Same work split, softmax policy and partial format as the
// fast kernel (decode_kernel.cuh); plain 4-byte loads of element pairs, one
// tile of 32 keys in shared memory at a time. Correctness first: the models
// that need speed have head_dim 64/128/256.
// Unified softmax: warp w scores heads w, w + kWarps (one key per lane), so each
// lane exponentiates its own score against φ and keeps its own max and sum.
// Included only by decode_generic_*.cu (one instantiation per file, generated from
// instantiations.cmake).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/decode_common.cuh"
#include "backend/cuda/attention/decode_fallback.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda::decode {

constexpr int kGenericKeys = kDecodeGenericTileKeys;
constexpr int kGenericPairs = kDecodeMaxHeadDim / 2;  // element pairs per row, at most
// P·V items (head, dim pair) per thread: kMaxG heads × 128 pairs over 128 threads.
constexpr int kGenericItems = kMaxG * kGenericPairs / kThreads;
static_assert(kMaxG * kGenericPairs % kThreads == 0);
static_assert(kGenericKeys == 32, "the score loop gives one key to each lane of a warp");
static_assert(sizeof(FallbackSmem) <= 2 * kGenericKeys * kGenericPairs * 4, "fits in sk, sv");

template <class T, SoftmaxPolicy kPolicy>
__global__ void __launch_bounds__(kThreads) generic_kernel(const DecodeParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  static_assert(sizeof(T) == 2, "K/V are f16 or bf16");
  constexpr bool kUnified = kPolicy == SoftmaxPolicy::kUnifiedMax;
  // sk and sv adjacent: the fallback's shared memory aliases both once the loop is done.
  __shared__ alignas(16) uint32_t skv[2][kGenericKeys * kGenericPairs];  // (K|V, key, dim pair)
  uint32_t* sk = skv[0];  // (key, dim pair): two T per word
  uint32_t* sv = skv[1];  // (key, dim pair)
  __shared__ float sq[kMaxG * kDecodeMaxHeadDim];        // (head, dim): q · scale · log2(e)
  __shared__ float sp[kMaxG][kGenericKeys];              // (head, key)
  __shared__ float scorr[kMaxG];
  __shared__ float sm_m[kMaxG], sm_l[kMaxG];
  __shared__ int s_bad[kMaxG];  // (head): unified, one split: the row fails its check

  const CtaWork w = cta_work(p, kGenericKeys);
  if (w.begin >= w.end) {  // uniform: the whole CTA leaves before any barrier
    store_empty<T>(p, w);
    return;
  }
  const int tid = static_cast<int>(threadIdx.x);
  const int D = p.head_dim, DP = D / 2;
  const int gc = w.gc;

  // The CTA's heads are consecutive in q: (gc, D) from row (b, h0).
  const T* qb = static_cast<const T*>(p.q) + (static_cast<int64_t>(w.b) * p.n_heads + w.h0) * D;
  for (int i = tid; i < gc * D; i += kThreads) sq[i] = to_float(qb[i]) * p.scale_log2;

  // (capacity, D/2) words of (slot, kvh); the launcher checked 4-byte alignment.
  const uint32_t* kg = reinterpret_cast<const uint32_t*>(static_cast<const T*>(p.k) + w.kv_offset);
  const uint32_t* vg = reinterpret_cast<const uint32_t*>(static_cast<const T*>(p.v) + w.kv_offset);

  SplitSoftmax<SoftmaxPolicy::kSynchronized> softmax;  // the synchronized policy's state
  softmax.init();
  // Unified: heads warp + j·kWarps of this lane: φ, and running max and sum of its keys.
  const int warp = tid / 32, lane = tid % 32;
  float u_phi[kHeadsPerWarp], u_m[kHeadsPerWarp], u_l[kHeadsPerWarp];
#pragma unroll
  for (int j = 0; j < kHeadsPerWarp; ++j) {
    const int g = warp + j * kWarps;
    u_phi[j] = kUnified && g < gc
                   ? unified_phi_log2(load_phi_inputs(p, w.slot, w.h0 + g), UnifiedType::kF32,
                                      w.len)
                   : 0.f;
    softmax_init(u_m[j], u_l[j]);
  }
  float acc[kGenericItems][2];
#pragma unroll
  for (int it = 0; it < kGenericItems; ++it) acc[it][0] = acc[it][1] = 0.f;

  const int n_tiles = ceil_div(w.end - w.begin, kGenericKeys);
  for (int t = 0; t < n_tiles; ++t) {
    const int key0 = w.begin + t * kGenericKeys;
    __syncthreads();  // the previous tile's readers are done (first tile: sq is visible)
    for (int i = tid; i < kGenericKeys * DP; i += kThreads) {
      const int r = i / DP, c = i % DP;
      const int key = key0 + r;
      uint32_t kw = 0u, vw = 0u;  // zeros past the end: p = 0 there, and 0·0 is no NaN
      if (key < w.end) {
        const int64_t at = static_cast<int64_t>(key) * DP + c;
        kw = kg[at];
        vw = vg[at];
      }
      sk[r * DP + c] = kw;
      sv[r * DP + c] = vw;
    }
    __syncthreads();

    // Head g = warp + j·kWarps, key r = lane (kGenericKeys == 32).
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) {
      const int g = warp + j * kWarps, r = lane;
      if (g >= gc) break;  // uniform per warp
      const float* qg = sq + g * D;
      const uint32_t* kr = sk + r * DP;
      float s = 0.f;
      for (int c = 0; c < DP; ++c) {
        const float2 kf = unpack2<T>(kr[c]);
        s = fmaf(qg[2 * c], kf.x, s);
        s = fmaf(qg[2 * c + 1], kf.y, s);
      }
      const bool valid = key0 + r < w.end;
      if constexpr (kUnified) {
        // softmax(t) = 2^(t - φ) / Σ 2^(t - φ) for any φ: p is final right here.
        const float pk = valid ? softmax_p_unified<Exp2Kind::kExact>(s, u_phi[j]) : 0.f;
        sp[g][r] = pk;
        if (valid) softmax_add_unified(u_m[j], u_l[j], s, pk);
      } else {
        sp[g][r] = valid ? s : -INFINITY;
      }
    }
    __syncthreads();
    if constexpr (!kUnified) {
      softmax.template step<kGenericKeys>(sp, scorr, gc);
      __syncthreads();
    }

#pragma unroll
    for (int it = 0; it < kGenericItems; ++it) {
      const int i = tid + it * kThreads;
      const int g = i / DP, c = i % DP;
      if (g < gc) {
        const float corr = kUnified ? 1.f : scorr[g];
        float a0 = acc[it][0] * corr, a1 = acc[it][1] * corr;
        for (int k = 0; k < kGenericKeys; ++k) {
          const float pk = sp[g][k];
          const float2 vf = unpack2<T>(sv[k * DP + c]);
          a0 = fmaf(pk, vf.x, a0);
          a1 = fmaf(pk, vf.y, a1);
        }
        acc[it][0] = a0;
        acc[it][1] = a1;
      }
    }
  }

  if constexpr (kUnified) {
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) {
      const int g = warp + j * kWarps;
      if (g >= gc) break;  // uniform per warp
      const float m = warp_max(u_m[j]), l = warp_sum(u_l[j]);
      if (lane == 0) {
        sm_m[g] = m;
        sm_l[g] = l;
        // With one split this is the whole row: its range check (a NaN fails it).
        s_bad[g] = !(unified_row_in_range(UnifiedType::kF32, w.len, m - u_phi[j]) && l > 0.f &&
                     isfinite(l));
        if (p.num_splits == 1) store_row_max(p, w, g, m);
      }
    }
  } else {
    softmax.publish(sm_m, sm_l, gc);
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < kGenericItems; ++it) {
    const int i = tid + it * kThreads;
    const int g = i / DP, c = i % DP;
    if (g < gc) {
      if constexpr (kUnified) {
        if (p.num_splits == 1 &&
            !(isfinite(acc[it][0] / sm_l[g]) && isfinite(acc[it][1] / sm_l[g])))
          s_bad[g] = 1;  // an output overflowed
      }
      store_result<T>(p, w, g, 2 * c, acc[it][0], sm_m[g], sm_l[g]);
      store_result<T>(p, w, g, 2 * c + 1, acc[it][1], sm_m[g], sm_l[g]);
    }
  }
  if constexpr (kUnified) {
    if (p.num_splits == 1)  // uniform; finish_single_split starts with a barrier
      finish_single_split<T>(p, w, s_bad, *reinterpret_cast<FallbackSmem*>(&skv[0][0]));
  }
}

}  // namespace fdpp::cuda::decode

namespace fdpp::cuda {

template <DType kDType, SoftmaxPolicy kPolicy>
Status launch_decode_generic(const DecodeParams& p, KernelStream stream) {
  using T = typename DeviceType<kDType>::type;
  const dim3 grid(static_cast<unsigned>(p.num_splits),
                  static_cast<unsigned>(p.n_kv_heads * p.head_groups),
                  static_cast<unsigned>(p.batch));
  FDPP_KERNEL_CHECK(
      launch_kernel(decode::generic_kernel<T, kPolicy>, grid, decode::kThreads, 0, stream, p));
  return Status::Ok();
}

template <DType kDType, SoftmaxPolicy kPolicy>
Result<int> decode_generic_occupancy() {
  using T = typename DeviceType<kDType>::type;
  int blocks = 0;
  FDPP_KERNEL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, decode::generic_kernel<T, kPolicy>, decode::kThreads, 0));
  return blocks;
}

}  // namespace fdpp::cuda
