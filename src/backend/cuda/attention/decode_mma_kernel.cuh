// The tensor-core split-KV decode kernel (FlashDecoding++ style), head_dim 64 and 128, f16/bf16,
// both softmax policies. Same grid, CtaWork, partial layout and fallback as the CUDA-core
// kernel of decode_kernel.cuh (decode.h has the contract); included only by the
// decode_mma_d*_*.cu instantiation files (one per file, generated from instantiations.cmake).
//
// Why tensor cores: the query heads of a GQA group (gc ≤ 8) share every K/V row, so per
// KV head Q·Kᵀ is a [gc × D]·[D × keys] product and P·V a [gc × keys]·[keys × D] one. On CUDA
// cores that is 2·gc·D FMAs per key (plus shuffle reductions): at gc = 4..8 the old kernel
// was bound by FP32 issue, not by HBM. mma.sync.m16n8k16 costs the same per key whatever gc:
//  * S = Q·Kᵀ: A = Q (16 rows; heads on rows 0..7, rows 8..15 are zero registers), B = Kᵀ
//    straight from the K rows in shared memory (ldmatrix, no transpose): per 16 keys and
//    D = 128, 2 n8 tiles × 8 k-steps = 16 mmas.
//  * Oᵀ += Vᵀ·Pᵀ: A = Vᵀ (ldmatrix.trans of the V rows: dims on the 16-row side), B = Pᵀ
//    (keys × heads, heads on the 8-column side). The C fragment of S for n8 tiles 2kk and
//    2kk+1 (lane: head lane/4, keys 2(lane%4)+{0,1}) is exactly the B fragment of key step
//    kk, so P never leaves registers: 8 mmas per 16 keys at D = 128.
//  24 mmas per 8 KB of K+V is ~50 SM clocks at mma.sync rates against ~430 clocks for the
//  SM's share of HBM bandwidth, so the kernel is bandwidth-bound at every group size,
//  including MHA (gc = 1), where 15/16 of the A rows are idle but cost nothing that binds.
//
// Data flow: each of the 4 warps owns every 4th warp tile of the split (kWK keys = 4 KB of K
// and 4 KB of V) and streams them through its own kStages-deep ring in shared memory, so no
// CTA barrier sits in the key loop (only __syncwarp); each warp keeps its own softmax state
// and Oᵀ accumulator, merged once at the end of the split.
//
// The copies: Hopper's TMA unit, one cp.async.bulk.tensor per 64-dim half of a K or V warp
// tile (2 KB at D 128: 4 per tile), issued by lane 0 and completing on the stage's mbarrier,
// through tensor maps of the layer's K and V caches (backend/cuda/tensor_map.h) with the
// 128-byte swizzle. They replaced 16 per-thread 16-byte cp.async per lane per tile, which
// left a lone CTA per SM well short of DRAM bandwidth, and per-row bulk copies (32 per tile),
// which were slower still. The TMA copies are faster wherever long rows (1K keys and more)
// stream through this kernel and slightly slower on the shortest ones (the barrier set-up
// and the single-lane issue) (docs/experiments/log.md, "decode_mma_kernel.cuh: TMA copies").
// Rows past the split's end (garbage, possibly NaN, past a sequence) land too: the warp
// zeroes those V rows before its P·V (P = 0 there, and 0·NaN = NaN).
// Shared memory per CTA: 4 warps × 3 stages × 8 KB + 1 KB of alignment = 97 KB → 2 CTAs per SM.
//
// Rounding: Q and K enter the first mma as stored (exact products, fp32 accumulation);
// t = s·scale·log2(e) in fp32. P is rounded to the element type for the second mma and the
// softmax sum l adds the same rounded P, so out = Σ P̃·v / Σ P̃ is an exact convex combination
// of the stored P̃. Synchronized: P = 2^(t − m) ≤ 1, as in FlashAttention-2. Unified:
// P = 2^(t − φ), which in fp16 overflows past 2^15.95 and loses terms below 2^-24: the range
// check uses UnifiedType::kF16P (kBF16P for bf16; dispatch/softmax_range.h) — the split
// kernel's own check, the unified combine's and the row-following φ's center alike
// (run_attention_decode passes the type to the combine).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/decode_common.cuh"
#include "backend/cuda/attention/decode_fallback.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ptx.cuh"
#include "backend/cuda/tensor_map.h"

namespace fdpp::cuda::decode {

// kWide: warp tiles of 8 KB of K (32 keys at D 128) instead of 4 KB, so each TMA box is 4 KB
// and a ring stage 16 KB: half the copies and barrier waits per byte, at 193 KB of shared
// memory per CTA (one CTA per SM). dispatch/decode_splits.h (decode_mma_wide_tiles) says where it runs.
template <int kD, bool kWide = false>
struct MmaTile {
  static constexpr int kWK = (kWide ? 4096 : 2048) / kD;  // keys per warp tile (16 / 32 at D 128)
  static constexpr int kKSteps = kWK / 16;   // P·V k-steps (16 keys each)
  static constexpr int kNT = kWK / 8;        // n8 tiles of S (8 keys each)
  static constexpr int kDSteps = kD / 16;    // Q·K k-steps over D, = m16 tiles of Oᵀ
  static constexpr int kChunks = kD / 8;     // 16-byte chunks per K/V row
  static constexpr int kStages = 3;          // per-warp ring depth
  static constexpr int kHalves = kD / 64;    // TMA boxes per K or V tile: 64 dims (128 B) each
  static constexpr int kBoxBytes = kWK * 128;          // one box: kWK rows × 128 bytes
  static constexpr int kTileBytes = kHalves * kBoxBytes;  // one K (or V) warp tile
  static constexpr int kStageBytes = 2 * kTileBytes;      // K tile then V tile
  // Oᵀ reduction buffer (warp, head, dim) fp32; the row stride kD + 4 puts the 8 heads a
  // quad of lanes writes on distinct banks.
  static constexpr int kRedStride = kD + 4;
  // The 128-byte swizzle repeats every 1024 bytes, so every box lands 1024-aligned: the
  // ring starts at the first 1024-byte boundary of the dynamic shared memory.
  static constexpr size_t kAlign = 1024;
  static constexpr size_t kPipeBytes = size_t{kWarps} * kStages * kStageBytes;
  static constexpr size_t kRedBytes = size_t{kWarps} * kMaxG * kRedStride * 4;
  static constexpr size_t kSmemBytes = kPipeBytes + kAlign;  // red and the fallback reuse it

  static_assert(kD == 64 || kD == 128, "the mma decode kernel takes head_dim 64 or 128");
  static_assert(kWK % 16 == 0 && kD % 64 == 0, "16-key steps; whole 128-byte boxes");
  static_assert(kBoxBytes % kAlign == 0, "every box stays 1024-byte aligned");
  static_assert(kThreads == 128 && kMaxG == 8, "4 warps; heads on the 8-column side");
  static_assert(decode_tile_keys(kD, true) % kWK == 0,
                "split boundaries (dispatch/decode_splits.h tiles) fall on warp-tile boundaries");
  static_assert(kRedBytes + sizeof(FallbackSmem) + 16 <= kSmemBytes, "reduction fits the ring");
};

// TMA and the mbarrier transaction count are Hopper features (sm_90). The kernel is
// compiled for every architecture of the build (FDPP_CUDA_ARCHS, "80;90" by default), but
// below sm_90 its body is a trap (FDPP_PTX_HAS_TMA, ptx.cuh): the host picks it only on
// compute capability 9.0 and later (dispatch/decode_splits.h, decode_uses_tensor_cores), and an A100 runs
// the CUDA-core kernel.
#if FDPP_PTX_HAS_TMA
// Byte offset of 16-byte chunk c (of kD / 8) of row r in a K or V warp tile: box c / 8
// (64 dims), its row r (128 bytes), chunk c % 8 swizzled by the TMA's 128-byte pattern.
template <int kD, bool kWide>
__device__ __forceinline__ uint32_t mma_tile_offset(int r, int c) {
  return static_cast<uint32_t>((c >> 3) * MmaTile<kD, kWide>::kBoxBytes + r * 128 +
                               (((c & 7) ^ (r & 7)) << 4));
}

// Issues warp tile `wt` of the split (keys begin + wt·kWK ...) of K and V into one stage of
// the calling warp's ring (lane 0 only: kHalves boxes per tensor). row0: the tensor maps'
// row of (slot, kv head, key 0).
template <int kD, bool kWide>
__device__ __forceinline__ void mma_issue_tile(uint32_t stage, uint32_t bar, const CUtensorMap& tk,
                                               const CUtensorMap& tv, int row0, int wt, int begin,
                                               int lane) {
  using Tl = MmaTile<kD, kWide>;
  if (lane != 0) return;
  const int y = row0 + begin + wt * Tl::kWK;
  mbar_arrive_expect_tx(bar, Tl::kStageBytes);
#pragma unroll
  for (int h = 0; h < Tl::kHalves; ++h) {
    tma_load_2d(stage + h * Tl::kBoxBytes, tk, 64 * h, y, bar);
    tma_load_2d(stage + Tl::kTileBytes + h * Tl::kBoxBytes, tv, 64 * h, y, bar);
  }
}
#endif  // FDPP_PTX_HAS_TMA

// tk, tv: tensor maps of the layer's K and V caches as (n_slots · n_kv_heads · capacity,
// kD) matrices with kWK × 64 boxes (launch_decode_mma encodes them).
template <int kD, bool kWide, class T, SoftmaxPolicy kPolicy>
__global__ void __launch_bounds__(kThreads, 2)
    mma_split_kernel(const DecodeParams p, const __grid_constant__ CUtensorMap tk,
                     const __grid_constant__ CUtensorMap tv) {
#if !FDPP_PTX_HAS_TMA
  __trap();  // never launched below sm_90 (see FDPP_PTX_HAS_TMA)
#else
  using Tl = MmaTile<kD, kWide>;
  constexpr int kWK = Tl::kWK, kNT = Tl::kNT, kDS = Tl::kDSteps, kKS = Tl::kKSteps;
  constexpr int kStages = Tl::kStages;
  constexpr bool kUnified = kPolicy == SoftmaxPolicy::kUnifiedMax;
  constexpr UnifiedType kRange =
      std::is_same_v<T, __half> ? UnifiedType::kF16P : UnifiedType::kBF16P;

  // From the first 1024-byte boundary: (warp, stage, {K, V}, box, kWK, 128 bytes), swizzled;
  // after the loop: red (warp, head, kRedStride) fp32, then a FallbackSmem, from smem.
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ __align__(8) uint64_t s_bar[kWarps][Tl::kStages];  // (warp, stage): full
  __shared__ float s_wm[kWarps][kMaxG], s_wl[kWarps][kMaxG];  // (warp, head): warp partials
  __shared__ float sm_m[kMaxG], sm_l[kMaxG];                  // (head): the split's m and l
  __shared__ int s_bad[kMaxG];                                // (head): unified, one split
  __shared__ float s_phi[kMaxG];                              // (head): unified, φ

  // Before the PDL wait (launch.h) only what no kernel in flight writes: the step's slots and
  // lengths (uploaded before the graph runs; cta_work reads them through L2) and this CTA's
  // own shared memory. So the slot's round trip and the barrier setup overlap the previous
  // kernel's tail; q and the caches (the new token's K and V are the previous kernel's
  // output) are read after the wait.
  const CtaWork w = cta_work(p, decode_tile_keys(kD, true));
  if (w.begin >= w.end) {  // uniform: the whole CTA leaves before any barrier
    pdl_wait();
    pdl_launch_dependents();
    store_empty<T>(p, w);
    return;
  }
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, tq = lane % 4;  // fragment row (head of S) and column pair
  const int gc = w.gc;

  // ldmatrix row addresses: lanes 8i..8i+7 give the 8 rows of matrix i; matrices 0/1 are
  // chunk pair (2s, 2s+1) of rows 0..7, matrices 2/3 the same of rows 8..15. For K (plain)
  // that yields b0, b1 of n8 tiles 2jj and 2jj+1 at k-step s; for V (.trans) a0..a3 of Vᵀ's
  // m16 tile s at key step jj. Rows are 16·row16 + lrow, so the swizzle's row term is lrow % 8.
  const int lrow = (lane & 7) + 8 * (lane >> 4), lchunk = (lane >> 3) & 1;
  auto frag = [&](int row16, int s) -> uint32_t {
    return mma_tile_offset<kD, kWide>(16 * row16 + lrow, 2 * s + lchunk);
  };

  float acc[kDS][4];  // Oᵀ: m16 tile i = dims 16i..; c0/c1 heads 2tq, 2tq+1 of dim 16i + g
#pragma unroll
  for (int i = 0; i < kDS; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
  // Softmax state of head g over this lane's keys (log2 units). Synchronized: m is the quad's
  // running max (the same in its 4 lanes), l this lane's part of Σ 2^(t - m). Unified: m is
  // this lane's max t (for the range check only), l its part of Σ 2^(t - φ).
  float m = -INFINITY, l = 0.f;
  const float scale = p.scale_log2;

  constexpr uint32_t kStageBytes = Tl::kStageBytes, kVOff = Tl::kTileBytes;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t ring = ((smem_base + Tl::kAlign - 1) & ~uint32_t{Tl::kAlign - 1}) +
                        static_cast<uint32_t>(warp * kStages) * kStageBytes;
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(&s_bar[warp][0]));
  if (lane < kStages) mbar_init(bars + 8 * lane, 1);  // one arrival (lane 0's) per phase
  mbar_fence_init();  // the TMA (async proxy) must see the initialised barriers
  __syncwarp();
  // φ: the calibrated one before the wait, the previous row max after it (load_phi_calibrated);
  // loaded now, decided after the first copies are issued.
  PhiInputs phi_in{0.f, NAN};
  if constexpr (kUnified)
    if (g < gc) phi_in.calibrated = load_phi_calibrated(p, w.h0 + g);
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  if constexpr (kUnified)
    if (g < gc) phi_in.previous_max = load_phi_previous(p, w.slot, w.h0 + g);
  // Q as the A operand of S = Q·Kᵀ: a0 = Q[g][16s + 2tq + {0,1}], a2 = the same 8 dims on;
  // rows 8..15 (a1, a3) are zero. Heads past gc are zero rows: their S, P and Oᵀ columns are
  // computed and dropped. Q is not pre-scaled, so it enters the mma exactly as stored.
  uint32_t qa[kDS][2];
  {
    const uint32_t* qr = reinterpret_cast<const uint32_t*>(
        static_cast<const T*>(p.q) + (static_cast<int64_t>(w.b) * p.n_heads + w.h0 + g) * kD);
#pragma unroll
    for (int s = 0; s < kDS; ++s) {
      qa[s][0] = g < gc ? qr[(16 * s + 2 * tq) / 2] : 0u;
      qa[s][1] = g < gc ? qr[(16 * s + 8 + 2 * tq) / 2] : 0u;
    }
  }

  const int row0 = static_cast<int>(w.kv_offset / kD);  // the maps' row of key 0
  const int n_wt = ceil_div(w.end - w.begin, kWK);
  const int my_tiles = n_wt > warp ? (n_wt - warp + kWarps - 1) / kWarps : 0;

#pragma unroll
  for (int i = 0; i < kStages - 1; ++i)
    if (i < my_tiles)
      mma_issue_tile<kD, kWide>(ring + i * kStageBytes, bars + 8 * i, tk, tv, row0, warp + i * kWarps,
                         w.begin, lane);
  const float phi = kUnified && g < gc ? unified_phi_log2(phi_in, kRange, w.len) : 0.f;
  int rd = 0, wr = kStages - 1;  // ring stages read / written this iteration
  unsigned parity = 0;           // bit s: the parity of stage s's next phase
  for (int i = 0; i < my_tiles; ++i) {
    // Refill the stage read in iteration i - 1 (released by its closing __syncwarp).
    if (i + kStages - 1 < my_tiles)
      mma_issue_tile<kD, kWide>(ring + wr * kStageBytes, bars + 8 * wr, tk, tv, row0,
                         warp + (i + kStages - 1) * kWarps, w.begin, lane);
    mbar_wait_parity(bars + 8 * rd, (parity >> rd) & 1u);  // tile i has landed
    parity ^= 1u << rd;
    const uint32_t kt = ring + rd * kStageBytes, vt = kt + kVOff;
    const int key0 = w.begin + (warp + i * kWarps) * kWK;
    if (key0 + kWK > w.end) {
      // The split's last tile, cut short: zero the V rows past the end. It is the warp's
      // last tile, so no TMA writes this stage again after these generic stores.
      const int first = max(w.end - key0, 0);
      for (int e = lane; e < (kWK - first) * Tl::kChunks; e += 32) {
        const int r = first + e / Tl::kChunks, c = e % Tl::kChunks;
        st_shared_fill_v4(vt + mma_tile_offset<kD, kWide>(r, c), 0u);
      }
      __syncwarp();
    }

    // ---- S = Q·Kᵀ: s[j] = head g × keys key0 + 8j + 2tq + {0, 1} (c2, c3: zero rows) ----
    float s[kNT][4];
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < kDS; ++ks)
#pragma unroll
      for (int jj = 0; jj < kNT / 2; ++jj) {
        uint32_t b[4];
        ldmatrix_x4(b, kt + frag(jj, ks));
        mma_m16n8k16<T>(s[2 * jj], qa[ks][0], 0u, qa[ks][1], 0u, b[0], b[1]);
        mma_m16n8k16<T>(s[2 * jj + 1], qa[ks][0], 0u, qa[ks][1], 0u, b[2], b[3]);
      }

    // ---- P, rounded to T and packed as the B fragments of P·V ----
    uint32_t pb[kNT];
    if constexpr (kUnified) {
      // softmax(t) = 2^(t - φ) / Σ 2^(t - φ) for any φ: P is final on the spot; no max
      // reduction, no rescale of acc.
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        float pe[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool valid = key0 + 8 * j + 2 * tq + e < w.end;
          const float t = s[j][e] * scale;
          m = valid ? fmaxf(m, t) : m;  // the max seen, for the range check
          pe[e] = valid ? softmax_p_unified<Exp2Kind::kMufu>(t, phi) : 0.f;
        }
        pb[j] = pack2<T>(pe[0], pe[1]);
        const float2 r = unpack2<T>(pb[j]);
        l += r.x + r.y;  // the rounded P, as the mma sees it
      }
    } else {
      float t[kNT][2];
      float tmax = -INFINITY;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool valid = key0 + 8 * j + 2 * tq + e < w.end;
          t[j][e] = valid ? s[j][e] * scale : -INFINITY;
          tmax = fmaxf(tmax, t[j][e]);
        }
      // The quad (lanes 4g..4g+3) holds head g's keys of this tile.
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
      const SoftmaxRescale rs = softmax_rescale<Exp2Kind::kMufu>(m, tmax);
      const float corr = rs.corr;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        pb[j] = pack2<T>(softmax_p<Exp2Kind::kMufu>(t[j][0], rs),
                         softmax_p<Exp2Kind::kMufu>(t[j][1], rs));
        const float2 r = unpack2<T>(pb[j]);
        sum += r.x + r.y;  // the rounded P, as the mma sees it
      }
      l = softmax_rescale_l(l, rs) + sum;
      m = rs.m_new;
      // acc holds heads 2tq and 2tq+1, whose corr sits in lanes 8tq and 8tq + 4. Once the max
      // settles corr is 1 in every lane and the warp skips the rescale (exactly: ×1).
      if (__any_sync(0xffffffffu, corr != 1.f)) {
        const float c0 = __shfl_sync(0xffffffffu, corr, 8 * tq);
        const float c1 = __shfl_sync(0xffffffffu, corr, 8 * tq + 4);
#pragma unroll
        for (int d = 0; d < kDS; ++d) {
          acc[d][0] *= c0;
          acc[d][1] *= c1;
          acc[d][2] *= c0;
          acc[d][3] *= c1;
        }
      }
    }

    // ---- Oᵀ += Vᵀ·Pᵀ: key step kk takes P of n8 tiles 2kk, 2kk+1 as b0, b1 ----
#pragma unroll
    for (int kk = 0; kk < kKS; ++kk)
#pragma unroll
      for (int d = 0; d < kDS; ++d) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, vt + frag(kk, d));
        mma_m16n8k16<T>(acc[d], a[0], a[1], a[2], a[3], pb[2 * kk], pb[2 * kk + 1]);
      }
    __syncwarp();  // every lane is done with stage rd before it is refilled
    rd = rd + 1 == kStages ? 0 : rd + 1;
    wr = wr + 1 == kStages ? 0 : wr + 1;
  }

  // ---- merge the warps' partials ----
  // Quad reduction of l (and of the unified per-lane max; the synchronized m is already the
  // quad's). A warp with no tiles reports m = -inf, l = 0, acc = 0.
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if constexpr (kUnified) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
  }
  if (tq == 0) s_wm[warp][g] = m, s_wl[warp][g] = l;
  if (kUnified && warp == 0 && tq == 0) s_phi[g] = phi;  // for the range check below
  // Every box issued was waited for, so nothing lands in the ring below.
  __syncthreads();  // every warp is out of its ring (red aliases all of them) and s_w* is set

  float* red = reinterpret_cast<float*>(smem);  // (warp, head, kRedStride) fp32
  {
    // Synchronized: warp w's partial is relative to its own max m_w; weigh it by
    // 2^(m_w - m*) with m* the CTA's max (a warp with no keys has m_w = -inf: weight 0).
    float f0 = 1.f, f1 = 1.f;  // weights of heads 2tq, 2tq+1 for this warp
    if constexpr (!kUnified) {
      float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
      for (int v = 0; v < kWarps; ++v) {
        m0 = fmaxf(m0, s_wm[v][2 * tq]);
        m1 = fmaxf(m1, s_wm[v][2 * tq + 1]);
      }
      f0 = partial_weight<Exp2Kind::kMufu>(s_wm[warp][2 * tq], max_offset(m0));
      f1 = partial_weight<Exp2Kind::kMufu>(s_wm[warp][2 * tq + 1], max_offset(m1));
    }
    float* r0 = red + (warp * kMaxG + 2 * tq) * Tl::kRedStride + g;
    float* r1 = r0 + Tl::kRedStride;
#pragma unroll
    for (int d = 0; d < kDS; ++d) {
      r0[16 * d] = acc[d][0] * f0;
      r1[16 * d] = acc[d][1] * f1;
      r0[16 * d + 8] = acc[d][2] * f0;
      r1[16 * d + 8] = acc[d][3] * f1;
    }
  }
  if (tid < gc) {
    float ms = -INFINITY, ls = 0.f;
#pragma unroll
    for (int v = 0; v < kWarps; ++v) ms = fmaxf(ms, s_wm[v][tid]);
    const float m_use = max_offset(ms);
#pragma unroll
    for (int v = 0; v < kWarps; ++v)
      ls += kUnified ? s_wl[v][tid]
                     : partial_weight<Exp2Kind::kMufu>(s_wm[v][tid], m_use) * s_wl[v][tid];
    sm_m[tid] = ms;
    sm_l[tid] = ls;
    if constexpr (kUnified) {
      // With one split this is the whole row: its range check for the type P was rounded to
      // (a NaN fails it).
      s_bad[tid] =
          !(unified_row_in_range(kRange, w.len, ms - s_phi[tid]) && ls > 0.f && isfinite(ls));
      if (p.num_splits == 1) store_row_max(p, w, tid, ms);
    }
  }
  __syncthreads();
  for (int i = tid; i < gc * kD; i += kThreads) {
    const int hg = i / kD, d = i % kD;
    float o = 0.f;
#pragma unroll
    for (int v = 0; v < kWarps; ++v) o += red[(v * kMaxG + hg) * Tl::kRedStride + d];
    if constexpr (kUnified) {
      if (p.num_splits == 1 && !isfinite(o / sm_l[hg])) s_bad[hg] = 1;  // an output overflowed
    }
    store_result<T>(p, w, hg, d, o, sm_m[hg], sm_l[hg]);
  }
  if constexpr (kUnified) {
    if (p.num_splits == 1) {  // uniform; finish_single_split starts with a barrier
      auto* fb = reinterpret_cast<FallbackSmem*>(smem + (Tl::kRedBytes + 15) / 16 * 16);
      finish_single_split<T>(p, w, s_bad, *fb);
    }
  }
#endif  // FDPP_PTX_HAS_TMA
}

}  // namespace fdpp::cuda::decode

namespace fdpp::cuda {

// Grid (split, kv head × head group, sequence), as the CUDA-core kernel's.
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy, bool kWide>
Status launch_decode_mma(const DecodeParams& p, KernelStream stream) {
  using T = typename DeviceType<kDType>::type;
  using Tl = decode::MmaTile<kHeadDim, kWide>;
  if (p.head_dim != kHeadDim)
    return Internal("mma decode kernel for head_dim " + std::to_string(kHeadDim) +
                    " called with " + std::to_string(p.head_dim));
  if (p.sm_arch < kDecodeTensorCoreMinArch)
    return Internal("mma decode kernel (TMA) called for sm_" + std::to_string(p.sm_arch));
  auto kernel = decode::mma_split_kernel<kHeadDim, kWide, T, kPolicy>;
  FDPP_KERNEL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(Tl::kSmemBytes)));
  // The layer's caches as (n_slots · n_kv_heads · capacity, head_dim) matrices.
  const int64_t rows = int64_t{p.n_slots} * p.n_kv_heads * p.capacity;
  CUtensorMap tk, tv;
  FDPP_RETURN_IF_ERROR(encode_b16_tensor_map_sw128(p.k, rows, kHeadDim, Tl::kWK, kDType, &tk));
  FDPP_RETURN_IF_ERROR(encode_b16_tensor_map_sw128(p.v, rows, kHeadDim, Tl::kWK, kDType, &tv));
  const dim3 grid(static_cast<unsigned>(p.num_splits),
                  static_cast<unsigned>(p.n_kv_heads * p.head_groups),
                  static_cast<unsigned>(p.batch));
  FDPP_KERNEL_CHECK(
      launch_kernel(kernel, grid, decode::kThreads, Tl::kSmemBytes, stream, p, tk, tv));
  return Status::Ok();
}

template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Result<int> decode_mma_occupancy() {
  using T = typename DeviceType<kDType>::type;
  using Tl = decode::MmaTile<kHeadDim>;
  auto kernel = decode::mma_split_kernel<kHeadDim, false, T, kPolicy>;
  FDPP_KERNEL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(Tl::kSmemBytes)));
  int blocks = 0;
  FDPP_KERNEL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel,
                                                                  decode::kThreads,
                                                                  Tl::kSmemBytes));
  return blocks;
}

}  // namespace fdpp::cuda
