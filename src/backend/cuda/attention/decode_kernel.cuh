// The fast split-KV decode kernel: head_dim a template constant (64, 128, 256),
// 16-bit K/V streamed through shared memory in 8 KB tiles by cp.async, two
// stages deep, while the previous tile is computed; fp32 math throughout.
// Included only by the decode_d*_*.cu instantiation files (one per file, generated from
// instantiations.cmake).
//
// Thread layout (128 threads): a key row of head_dim elements is kLanes = D/8
// threads × 16 bytes; kRows = 128/kLanes rows are handled at once.
//  - Q·K: every thread holds its 8 dims of q for all (≤ 8) query heads of the
//    CTA in registers and dots them with one K row per pass, so a K row is read
//    from shared memory once for the whole GQA group; the kLanes partial dots
//    are summed with xor shuffles.
//  - P·V: "items" (head g, key residue ks) are spread over the kRows row groups:
//    with gc heads each head gets ks_count = kRows/gc groups that split the
//    tile's keys by residue, so the accumulator is 8 floats per item whatever
//    the group size; the ks partials are summed through shared memory once, at
//    the end of the split.
//  - Softmax, synchronized: a separate step per tile (SplitSoftmax) finds the tile
//    max of each head, rescales, and turns the scores into probabilities.
//  - Softmax, unified (issue 4): lane g of each key row owns head g: right after
//    the Q·K reduction it writes p = 2^(t - φ_g) instead of t and adds p to its own
//    sum and t to its own max, reduced once after the last tile. No step, no
//    rescale, one barrier less per tile. With one split the CTA checks its rows and
//    recomputes the failing ones (decode_fallback.cuh); otherwise the combine does.
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

template <int kD, class T>
struct FastTile {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte load
  static constexpr int kLanes = kD / kVec;                        // threads per key row
  static constexpr int kRows = kThreads / kLanes;                 // key rows per pass
  static constexpr int kKeys = kDecodeTileBytes / (kD * static_cast<int>(sizeof(T)));
  static constexpr int kChunks = kKeys * kLanes / kThreads;  // 16-byte copies / thread / tensor
  static constexpr int kItems = (kMaxG + kRows - 1) / kRows;  // P·V items per row group

  static_assert(sizeof(T) == 2, "K/V are f16 or bf16");
  static_assert(kVec == 8, "unpack8/pack8 move 8 elements");
  static_assert(kD % kVec == 0 && kLanes <= 32 && 32 % kLanes == 0,
                "a key row's lanes must sit inside one warp for the shuffle reduction");
  static_assert(kKeys % kRows == 0, "every thread runs the same number of Q·K passes");
  static_assert((kKeys * kLanes) % kThreads == 0, "every thread issues the same copies");
  static_assert(kKeys == decode_tile_keys(kD, true), "dispatch/decode_splits.h must agree on the tile");
  static_assert(kKeys <= 64, "the softmax step holds at most two keys per lane");
  static_assert(kLanes >= kMaxG, "unified: lane g of a key row owns head g");
  static_assert(2 * kRows <= kKeys, "unified: the row partials of m and l fit in sp");
  static_assert(sizeof(FallbackSmem) <= 2 * kKeys * kD * sizeof(T), "fallback fits in sk");
  // The end-of-split reduction reuses the K stages: n_items ≤ kItems·kRows rows of kD floats.
  static_assert(kItems * kRows * kD * 4 <= 2 * kKeys * kD * static_cast<int>(sizeof(T)),
                "the ks partials must fit in the K stage buffers");
};

// Copies tile `tile` of the split (keys begin + tile·kKeys ...) of K and V into
// stage buffers. A tile is kKeys consecutive rows of one (slot, kv head), i.e.
// one contiguous 8 KB run of global memory, copied by consecutive threads in
// consecutive 16-byte pieces (fully coalesced). Rows past `end` are zero-filled
// without reading, so V rows the softmax gives p = 0 are 0, never NaN.
template <int kD, class T>
__device__ __forceinline__ void issue_tile(T* sk, T* sv, const T* kg, const T* vg, int key0,
                                           int begin, int end) {
  using Tile = FastTile<kD, T>;
#pragma unroll
  for (int c = 0; c < Tile::kChunks; ++c) {
    const int i = static_cast<int>(threadIdx.x) + c * kThreads;
    const int r = i / Tile::kLanes, col = i % Tile::kLanes;
    const int key = key0 + r;
    const bool fill = key < end;
    // An unfilled copy reads nothing, but its address is still formed: keep it in range.
    const int64_t src = static_cast<int64_t>(fill ? key : begin) * kD + col * Tile::kVec;
    const int dst = r * kD + col * Tile::kVec;
    cp_async_16(sk + dst, kg + src, fill);
    cp_async_16(sv + dst, vg + src, fill);
  }
  cp_async_commit();
}

template <int kD, class T, SoftmaxPolicy kPolicy>
__global__ void __launch_bounds__(kThreads) split_kernel(const DecodeParams p) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  using Tile = FastTile<kD, T>;
  constexpr int kVec = Tile::kVec, kLanes = Tile::kLanes, kRows = Tile::kRows;
  constexpr int kKeys = Tile::kKeys, kItems = Tile::kItems;
  constexpr bool kUnified = kPolicy == SoftmaxPolicy::kUnifiedMax;

  __shared__ alignas(16) T sk[2][kKeys * kD];  // (stage, key, dim)
  __shared__ alignas(16) T sv[2][kKeys * kD];  // (stage, key, dim)
  __shared__ float sp[kMaxG][kKeys];           // (head, key): scores, then probabilities
  __shared__ float scorr[kMaxG];               // (head): this tile's accumulator rescale
  __shared__ float sm_m[kMaxG], sm_l[kMaxG];   // (head): the split's final m and l
  __shared__ int s_bad[kMaxG];                 // (head): unified, one split: the row fails

  const CtaWork w = cta_work(p, kKeys);
  if (w.begin >= w.end) {  // uniform: the whole CTA leaves before any barrier
    store_empty<T>(p, w);
    return;
  }
  const int tid = static_cast<int>(threadIdx.x);
  const int row = tid / kLanes, lane = tid % kLanes;
  const int gc = w.gc;

  // q of the CTA's heads, dims [lane·8, lane·8 + 8), pre-scaled so scores come
  // out in log2 units. Heads past gc stay 0 and are never used.
  float q[kMaxG][kVec];
  {
    const T* qb = static_cast<const T*>(p.q) +
                  (static_cast<int64_t>(w.b) * p.n_heads + w.h0) * kD + lane * kVec;  // (gc, D)
#pragma unroll
    for (int g = 0; g < kMaxG; ++g) {
      if (g < gc) {
        unpack8<T>(*reinterpret_cast<const uint4*>(qb + g * kD), q[g]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) q[g][e] *= p.scale_log2;
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) q[g][e] = 0.f;
      }
    }
  }

  // P·V items: head g = item / ks_count, key residue ks = item % ks_count.
  const int ks_count = max(1, kRows / gc);
  const int n_items = gc * ks_count;
  float acc[kItems][kVec];
#pragma unroll
  for (int it = 0; it < kItems; ++it)
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[it][e] = 0.f;

  const T* kg = static_cast<const T*>(p.k) + w.kv_offset;  // (capacity, D) of (slot, kvh)
  const T* vg = static_cast<const T*>(p.v) + w.kv_offset;  // (capacity, D)
  const int n_tiles = ceil_div(w.end - w.begin, kKeys);
  SplitSoftmax<SoftmaxPolicy::kSynchronized> softmax;  // the synchronized policy's state
  softmax.init();
  // Unified: this thread's head (lane g < gc owns head g), its φ, and its running max and
  // sum over the keys of its row group: registers, reduced across row groups at the end.
  // φ is loaded now and decided once the first tile's copies are issued (load_phi_inputs).
  float u_m, u_l;
  softmax_init(u_m, u_l);
  PhiInputs phi_in{0.f, NAN};
  if constexpr (kUnified)
    if (lane < gc) phi_in = load_phi_inputs(p, w.slot, w.h0 + lane);

  issue_tile<kD, T>(sk[0], sv[0], kg, vg, w.begin, w.begin, w.end);
  const float u_phi =
      kUnified && lane < gc ? unified_phi_log2(phi_in, UnifiedType::kF32, w.len) : 0.f;
  for (int t = 0; t < n_tiles; ++t) {
    const int stage = t & 1;
    const int key0 = w.begin + t * kKeys;
    // Prefetch the next tile into the other stage (freed by the barrier that
    // ended the previous iteration); an empty group keeps the wait count uniform.
    if (t + 1 < n_tiles)
      issue_tile<kD, T>(sk[stage ^ 1], sv[stage ^ 1], kg, vg, key0 + kKeys, w.begin, w.end);
    else
      cp_async_commit();
    cp_async_wait<1>();  // this thread's copies of tile t have landed ...
    __syncthreads();     // ... and everyone else's

    // ---- scores: t = q·k in log2 units, -inf past the split's end ----
    const T* kt = sk[stage];
#pragma unroll
    for (int i = 0; i < kKeys / kRows; ++i) {
      const int r = row + i * kRows;
      float kf[kVec];
      unpack8<T>(*reinterpret_cast<const uint4*>(kt + r * kD + lane * kVec), kf);
      const bool valid = key0 + r < w.end;
#pragma unroll
      for (int g = 0; g < kMaxG; ++g) {
        if (g < gc) {  // uniform, so every lane reaches the shuffles
          float s = 0.f;
#pragma unroll
          for (int e = 0; e < kVec; ++e) s = fmaf(q[g][e], kf[e], s);
          s = group_sum<kLanes>(s);
          if constexpr (kUnified) {
            // softmax(t) = 2^(t - φ) / Σ 2^(t - φ) for any φ: p is final right here.
            if (lane == g) {
              const float pk = valid ? softmax_p_unified<Exp2Kind::kExact>(s, u_phi) : 0.f;
              sp[g][r] = pk;
              if (valid) softmax_add_unified(u_m, u_l, s, pk);
            }
          } else {
            if (lane == 0) sp[g][r] = valid ? s : -INFINITY;
          }
        }
      }
    }
    __syncthreads();
    if constexpr (!kUnified) {
      softmax.template step<kKeys>(sp, scorr, gc);
      __syncthreads();
    }

    // ---- acc = acc·corr + Σ_k p_k·v_k over this item's keys ----
    const T* vt = sv[stage] + lane * kVec;
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int item = row + it * kRows;
      if (item < n_items) {
        const int g = item / ks_count, ks = item % ks_count;
        if constexpr (!kUnified) {
          const float corr = scorr[g];
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[it][e] *= corr;
        }
#pragma unroll 4
        for (int k = ks; k < kKeys; k += ks_count) {
          const float pk = sp[g][k];
          float vf[kVec];
          unpack8<T>(*reinterpret_cast<const uint4*>(vt + k * kD), vf);
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[it][e] = fmaf(pk, vf[e], acc[it][e]);
        }
      }
    }
    __syncthreads();  // stage, sp and scorr are rewritten next iteration
  }
  cp_async_wait<0>();  // only empty groups remain; nothing may land in sk below

  // ---- sum the ks partials of each head and store ----
  if constexpr (kUnified) {
    // (head, row group) partials of m and l into sp, free since the loop's last barrier.
    if (lane < gc) {
      sp[lane][row] = u_m;
      sp[lane][kRows + row] = u_l;
    }
  } else {
    softmax.publish(sm_m, sm_l, gc);
  }
  float* red = reinterpret_cast<float*>(&sk[0][0]);  // (n_items, D) fp32, reusing stage 0..1
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int item = row + it * kRows;
    if (item < n_items) {
      float4* dst = reinterpret_cast<float4*>(red + item * kD + lane * kVec);
      dst[0] = make_float4(acc[it][0], acc[it][1], acc[it][2], acc[it][3]);
      dst[1] = make_float4(acc[it][4], acc[it][5], acc[it][6], acc[it][7]);
    }
  }
  __syncthreads();
  if constexpr (kUnified) {
    if (tid < gc) {
      float m, l;
      softmax_init(m, l);
      for (int r = 0; r < kRows; ++r) softmax_merge_unified(m, l, sp[tid][r], sp[tid][kRows + r]);
      sm_m[tid] = m;
      sm_l[tid] = l;
      // With one split this is the whole row: its range check (a NaN fails it). Thread
      // tid < gc is lane tid of row 0, so u_phi is head tid's φ (no second global load).
      static_assert(kMaxG <= kLanes, "threads 0..gc-1 sit in key row 0");
      s_bad[tid] = !(unified_row_in_range(UnifiedType::kF32, w.len, m - u_phi) && l > 0.f &&
                     isfinite(l));
      if (p.num_splits == 1) store_row_max(p, w, tid, m);
    }
    __syncthreads();
  }
  for (int i = tid; i < gc * kD; i += kThreads) {
    const int g = i / kD, d = i % kD;
    float o = 0.f;
    for (int ks = 0; ks < ks_count; ++ks) o += red[(g * ks_count + ks) * kD + d];
    if constexpr (kUnified) {
      if (p.num_splits == 1 && !isfinite(o / sm_l[g])) s_bad[g] = 1;  // an output overflowed
    }
    store_result<T>(p, w, g, d, o, sm_m[g], sm_l[g]);
  }
  if constexpr (kUnified) {
    if (p.num_splits == 1)  // uniform; finish_single_split starts with a barrier
      finish_single_split<T>(p, w, s_bad, *reinterpret_cast<FallbackSmem*>(&sk[0][0]));
  }
}

}  // namespace fdpp::cuda::decode

namespace fdpp::cuda {

// Grid (split, kv head × head group, sequence): all splits of one (sequence,
// head) are adjacent in launch order, so a GQA group's second head-group CTA
// finds that KV in L2.
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Status launch_decode_split(const DecodeParams& p, KernelStream stream) {
  using T = typename DeviceType<kDType>::type;
  if (p.head_dim != kHeadDim)
    return Internal("decode kernel for head_dim " + std::to_string(kHeadDim) + " called with " +
                    std::to_string(p.head_dim));
  const dim3 grid(static_cast<unsigned>(p.num_splits),
                  static_cast<unsigned>(p.n_kv_heads * p.head_groups),
                  static_cast<unsigned>(p.batch));
  FDPP_KERNEL_CHECK(launch_kernel(decode::split_kernel<kHeadDim, T, kPolicy>, grid,
                                  decode::kThreads, 0, stream, p));
  return Status::Ok();
}

template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Result<int> decode_split_occupancy() {
  using T = typename DeviceType<kDType>::type;
  int blocks = 0;
  FDPP_KERNEL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, decode::split_kernel<kHeadDim, T, kPolicy>, decode::kThreads, 0));
  return blocks;
}

}  // namespace fdpp::cuda
