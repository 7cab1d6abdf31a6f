// Causal prefill attention on tensor cores, FlashAttention-2 style: one CTA owns a tile of
// kBlockM query rows of one head, streams the keys/values of its KV head through shared
// memory in kBlockN-key tiles (cp.async, double-buffered), computes S = Q·Kᵀ and O += P·V with
// mma.sync m16n8k16 (fp32 accumulation) and keeps the softmax state in registers; the score
// matrix never leaves the SM. Included only by the prefill_d*_*.cu instantiation files
// (generated from instantiations.cmake).
//
// Unified-max softmax (SoftmaxPolicy::kUnifiedMax, design.md Technique 1): P = 2^(t - φ)
// with φ per head known up front, so a key tile needs no row-max reduction across the quad
// and O is never rescaled; each thread keeps its own max and sum per row, reduced once.
// After the last tile every row checks its max against φ's safe range for the type P is
// rounded to (dispatch/softmax_range.h: fp16 P overflows past 2^15.95). If any row of the CTA
// fails, the CTA runs its key loop a second time with each row's own φ set from the exact
// row max the first pass found (the textbook two-pass safe softmax: max first, then
// exponentials), which puts every row in the middle of its range: exact, as the synchronized
// kernel is. The common path pays one barrier and a few shuffles per CTA. (A synchronized
// second pass in the same kernel needs more registers than the loop has: it spilled.)
// φ enters as a bias the S accumulator starts from, s = q·k - φ/scale_log2 (the mma adds
// q·k to it), so P = 2^(s·scale_log2) costs what the synchronized kernel's exponent does and
// no register holds φ through the loop (the d64 loop spilled with one per row).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention/prefill_params.h"
#include "backend/cuda/attention/prefill_softmax.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ptx.cuh"

namespace fdpp::cuda::prefill {

// ---- tile configuration ------------------------------------------------------------------
template <int kHeadDim_, int kWarps_, int kWarpMTiles_, int kBlockN_, int kMinBlocks_>
struct TileConfig {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = kWarps * 32;
  // Each warp owns kWarpMTiles m16 row tiles, so every K/V fragment it reads from shared
  // memory feeds kWarpMTiles mmas: with 1 the kernel is bound by shared-memory bandwidth
  // (16 FLOP per byte ≈ half the tensor peak), with 2 it is not.
  static constexpr int kWarpMTiles = kWarpMTiles_;
  static constexpr int kWarpRows = 16 * kWarpMTiles;
  static constexpr int kBlockM = kWarps * kWarpRows;  // query rows per CTA
  static constexpr int kBlockN = kBlockN_;            // keys per pipeline stage
  static constexpr int kMinBlocks = kMinBlocks_;      // CTAs per SM the registers must allow
  static constexpr int kStages = 2;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per smem row
  static constexpr int kNTiles = kBlockN / 8;   // n8 column tiles of S per m16 tile
  static constexpr int kDTiles = kHeadDim / 8;  // n8 column tiles of O per m16 tile
  static constexpr int kQElems = kBlockM * kHeadDim;
  static constexpr int kKVElems = kBlockN * kHeadDim;
  // sQ (kBlockM, head_dim) | sK (kStages, kBlockN, head_dim) | sV (kStages, kBlockN, head_dim)
  static constexpr size_t kSmemBytes = sizeof(uint16_t) * (kQElems + 2 * kStages * kKVElems);

  // The XOR swizzle permutes the low 3 bits of the chunk index, so a row needs >= 8 chunks.
  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 256, "head_dim must be 64, 128 or 256");
  static_assert(kBlockN % 16 == 0, "P·V consumes keys 16 at a time (the mma k dimension)");
  static_assert((kBlockN * kChunks) % kThreads == 0, "K/V tile copy must divide evenly");
  static_assert((kBlockM * kChunks) % kThreads == 0, "Q tile copy must divide evenly");
  static_assert(kSmemBytes <= 227 * 1024, "exceeds the 227 KB per-CTA shared memory of sm_90");
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a (rows, head_dim) b16 tile. A row is
// a multiple of 128 bytes, so without the XOR the 8 rows an ldmatrix phase reads (same chunk) would
// all hit the same 4 banks; XOR-ing the chunk with row%8 spreads them over all 32 banks. The
// same formula is used for the cp.async writes and for every read.
template <int kHeadDim>
__device__ __forceinline__ uint32_t swizzle(int row, int chunk) {
  return static_cast<uint32_t>(row * (kHeadDim * 2) + ((chunk ^ (row & 7)) << 4));
}

// Copies rows [0, kRows) of a row-major global tile (row stride `stride` elements) into a
// swizzled (kRows, head_dim) smem tile; rows >= `valid` are zero-filled, never read: past the
// end of q they do not exist, and cache positions >= start_pos+T hold stale data (maybe NaN,
// and 0·NaN would poison P·V). Each thread owns one chunk column and rows row0 + i·kRowStep;
// kRowStep is a multiple of 8, so row % 8 (the swizzle) is the same for all its rows.
template <class Cfg, int kRows, class T>
__device__ __forceinline__ void load_tile(uint32_t smem, const T* gmem, int64_t stride,
                                          int valid, int tid) {
  constexpr int kRowStep = Cfg::kThreads / Cfg::kChunks;
  static_assert(Cfg::kThreads % Cfg::kChunks == 0 && kRowStep % 8 == 0, "copy layout");
  static_assert(kRows % kRowStep == 0, "copy must divide evenly");
  const int row0 = tid / Cfg::kChunks;
  const int chunk = tid % Cfg::kChunks;
  const uint32_t dst = smem + swizzle<Cfg::kHeadDim>(row0, chunk);
  const T* src = gmem + row0 * stride + chunk * 8;
#pragma unroll
  for (int i = 0; i < kRows / kRowStep; ++i) {
    const bool ok = row0 + i * kRowStep < valid;
    cp_async_16_shared(dst + i * kRowStep * Cfg::kHeadDim * 2,
                       ok ? src + i * kRowStep * stride : gmem, ok ? 16 : 0);
  }
}

// The ldmatrix address of each lane, for row (row_const + lane_row) and 16-byte chunk
// (2·step + lane_chunk) of a swizzled tile, where row_const is a multiple of 8 (so row % 8 ==
// lane_row % 8) and lane_chunk is 0 or 1. The XOR only changes the low 3 bits of the chunk,
// so the address splits into one of 4 per-lane registers (chosen by step % 4) plus a
// compile-time offset: 4 registers per operand instead of one per (row, step) pair.
template <int kHeadDim>
struct FragAddr {
  uint32_t base[4];
  __device__ __forceinline__ FragAddr(uint32_t tile, int lane_row, int lane_chunk) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      base[i] = tile + lane_row * (kHeadDim * 2) + (((2 * i + lane_chunk) ^ (lane_row & 7)) << 4);
  }
  __device__ __forceinline__ uint32_t at(int row_const, int step) const {
    return base[step & 3] + row_const * (kHeadDim * 2) + ((step >> 2) << 7);
  }
};

// ---- the kernel -----------------------------------------------------------------------------
template <class Cfg, DType kDType, SoftmaxPolicy kPolicy>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    prefill_attention_kernel(const PrefillParams p) {
  using T = typename DeviceType<kDType>::type;
  constexpr int kD = Cfg::kHeadDim;
  constexpr int kMT = Cfg::kWarpMTiles;
  constexpr int kNT = Cfg::kNTiles;
  constexpr int kDT = Cfg::kDTiles;
  constexpr int kBN = Cfg::kBlockN;

  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sQ = smem_u32(smem);                                 // (kBlockM, head_dim)
  const uint32_t sK = sQ + Cfg::kQElems * 2;                          // (2, kBlockN, head_dim)
  const uint32_t sV = sK + Cfg::kStages * Cfg::kKVElems * 2;          // (2, kBlockN, head_dim)

  constexpr bool kUnified = kPolicy == SoftmaxPolicy::kUnifiedMax;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int head = blockIdx.x;
  const int64_t seq = blockIdx.z;  // sequence of a batched launch
  // Linear block order runs x fastest, so all heads of the last (longest: most keys under the
  // causal mask) query tile are scheduled first and the short tiles fill the tail of the wave.
  const int q0 = (gridDim.y - 1 - blockIdx.y) * Cfg::kBlockM;
  const int q_rows = min(Cfg::kBlockM, p.T - q0);
  const int kv_head = head / p.group;
  const int kv_end = p.start_pos + q0 + q_rows;  // keys this tile can see: [0, kv_end)
  const int n_blocks = (kv_end + kBN - 1) / kBN;

  const int64_t q_stride = static_cast<int64_t>(p.n_heads) * kD;  // elements between tokens
  const int64_t q_off = seq * p.q_batch_stride + static_cast<int64_t>(q0) * q_stride + head * kD;
  const T* q = static_cast<const T*>(p.q) + q_off;
  const int64_t kv_off = seq * p.kv_batch_stride + static_cast<int64_t>(kv_head) * p.capacity * kD;
  const T* k = static_cast<const T*>(p.k) + kv_off;  // (capacity, head_dim)
  const T* v = static_cast<const T*>(p.v) + kv_off;  // (capacity, head_dim)

  float o[kMT][kDT][4];  // (kWarpRows, head_dim) output accumulator, C-fragment layout
  RowState<kMT> st;
  bool second_pass = false;

  const int warp_row0 = warp * Cfg::kWarpRows;       // first row of this warp in the tile
  const int row_pos0 = p.start_pos + q0 + warp_row0;  // its absolute position
  const int g = lane / 4;   // fragment row (and row + 8)
  const int tig = lane % 4;  // fragment column pair
  // Unified: the bias -φ/scale_log2 (raw score units) of each query row of the tile, after
  // K/V in shared memory: from the head's φ in the first pass, from the row's own max
  // (centred in the range) in the second. This thread's row (mi, h) is
  // row_bias[mi·16 + h·8], the second pass's candidate row_bias[kBlockM + mi·16 + h·8]; its
  // quad's lane tig == 0 writes them.
  float* const row_bias =
      reinterpret_cast<float*>(smem + Cfg::kSmemBytes) + warp_row0 + g;  // (2, kBlockM) in all
  if constexpr (kUnified) {
    const float bias = -p.phi[head] * kLog2e / p.scale_log2;
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
      if (tig == 0)  // the second pass's entries too, so that no row is ever left unset
        row_bias[mi * 16] = row_bias[mi * 16 + 8] = row_bias[Cfg::kBlockM + mi * 16] =
            row_bias[Cfg::kBlockM + mi * 16 + 8] = bias;
    __syncwarp();
  }

  // Per-lane ldmatrix row offsets (the chunk part is added per step). Every row used below is
  // a multiple of 8 plus lane%8, so row%8 == lane%8 in the swizzle.
  // A (Q): lanes 0-15 rows 0-15 of the m16 tile at chunk 2ks, lanes 16-31 the same rows at
  // chunk 2ks+1 -> r0..r3 = a0a1, a2a3, a4a5, a6a7.
  const FragAddr<kD> q_frag(sQ + warp_row0 * kD * 2, lane & 15, lane >> 4);
  // B (K, non-trans): lanes 0-7 keys 0-7 chunk 2ks, 8-15 keys 0-7 chunk 2ks+1, 16-23 keys 8-15
  // chunk 2ks, 24-31 keys 8-15 chunk 2ks+1 -> r0r1 = b0b1,b2b3 of n-tile 2np, r2r3 of 2np+1.
  const FragAddr<kD> k_frag(sK, ((lane >> 4) << 3) + (lane & 7), (lane >> 3) & 1);
  // B (V, trans): lanes 0-7 keys 0-7 chunk 2dp, 8-15 keys 8-15 chunk 2dp, 16-23 keys 0-7
  // chunk 2dp+1, 24-31 keys 8-15 chunk 2dp+1 -> r0r1 = b0b1,b2b3 of d-tile 2dp, r2r3 of 2dp+1.
  const FragAddr<kD> v_frag(sV, (((lane >> 3) & 1) << 3) + (lane & 7), lane >> 4);

  // Prologue: Q tile and the first (highest) key tile in one cp.async group.
  const int last_key0 = (n_blocks - 1) * kBN;
  load_tile<Cfg, Cfg::kBlockM>(sQ, q, q_stride, q_rows, tid);
  load_tile<Cfg, kBN>(sK, k + static_cast<int64_t>(last_key0) * kD, kD, kv_end - last_key0, tid);
  load_tile<Cfg, kBN>(sV, v + static_cast<int64_t>(last_key0) * kD, kD, kv_end - last_key0, tid);
  cp_async_commit();

  for (;;) {  // one pass; unified: a second if a row of the CTA fails its check
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int dj = 0; dj < kDT; ++dj)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mi][dj][e] = 0.f;
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) softmax_init(st.m[mi][h], st.l[mi][h]);

    // Key tiles from the last (diagonal: needs the mask) down to 0, so the masked tiles come
    // first and the rest run without the mask test.
    for (int it = 0; it < n_blocks; ++it) {
      const int j = n_blocks - 1 - it;
      const int stage = it & 1;
      const int key0 = j * kBN;
      // Tile j has landed, and every warp has finished reading stage^1 (iteration it-1), so it
      // can be refilled: one barrier per tile.
      cp_async_wait<0>();
      __syncthreads();
      if (j > 0) {
        const int nkey0 = key0 - kBN;
        const uint32_t off = (stage ^ 1) * Cfg::kKVElems * 2;
        const int64_t at = static_cast<int64_t>(nkey0) * kD;
        load_tile<Cfg, kBN>(sK + off, k + at, kD, kv_end - nkey0, tid);
        load_tile<Cfg, kBN>(sV + off, v + at, kD, kv_end - nkey0, tid);
        cp_async_commit();
      }
      const uint32_t stage_off = stage * Cfg::kKVElems * 2;
      // A warp with no real rows (T ends before it) or whose rows all lie before every key of
      // the tile (its part of the diagonal tiles) would only add zeros: it skips to the next
      // barrier. The condition is warp-uniform, and the barrier is at the top of the loop.
      if (warp_row0 >= q_rows || key0 > row_pos0 + Cfg::kWarpRows - 1) continue;

      // S = Q · Kᵀ (+ the row's bias, unified): (kWarpRows, kBlockN) per warp, fp32.
      float s[kMT][kNT][4];
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
        float b0 = 0.f, b1 = 0.f;
        if constexpr (kUnified) {
          b0 = row_bias[mi * 16];
          b1 = row_bias[mi * 16 + 8];
        }
#pragma unroll
        for (int nj = 0; nj < kNT; ++nj) {
          s[mi][nj][0] = s[mi][nj][1] = b0;
          s[mi][nj][2] = s[mi][nj][3] = b1;
        }
      }
#pragma unroll
      for (int ks = 0; ks < kD / 16; ++ks) {
        uint32_t a[kMT][4];
#pragma unroll
        for (int mi = 0; mi < kMT; ++mi)
          ldmatrix_x4(a[mi], q_frag.at(mi * 16, ks));
#pragma unroll
        for (int np = 0; np < kNT / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, k_frag.at(np * 16, ks) + stage_off);
#pragma unroll
          for (int mi = 0; mi < kMT; ++mi) {
            mma_m16n8k16<T>(s[mi][2 * np], a[mi], b[0], b[1]);
            mma_m16n8k16<T>(s[mi][2 * np + 1], a[mi], b[2], b[3]);
          }
        }
      }

      // Causal mask, only where some key of the tile lies above the tile's first query position
      // (that also covers keys >= kv_end, since kv_end - 1 >= start_pos + q0). Query row r sees
      // keys <= start_pos + q0 + r; the min with kv_end - 1 keeps rows past T (never stored)
      // off the zero-filled keys too.
      if (key0 + kBN - 1 > p.start_pos + q0) {
#pragma unroll
        for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int limit = min(row_pos0 + mi * 16 + g + (e >> 1) * 8, kv_end - 1);
#pragma unroll
            for (int nj = 0; nj < kNT; ++nj) {
              const int key = key0 + nj * 8 + tig * 2 + (e & 1);
              if (key > limit) s[mi][nj][e] = -INFINITY;
            }
          }
      }

      OnlineSoftmax<kPolicy>::step(s, o, st, p.scale_log2);

      // O += P · V. The C fragments of n-tiles 2kk and 2kk+1 of S are, element for element, the
      // A fragment of k-step kk (a0a1 = row g keys 2tig.., a2a3 = row g+8, a4..a7 = keys +8), so
      // P goes from the accumulators to the mma in registers, rounded to the element type.
#pragma unroll
      for (int kk = 0; kk < kNT / 2; ++kk) {
        uint32_t pa[kMT][4];
#pragma unroll
        for (int mi = 0; mi < kMT; ++mi) {
          pa[mi][0] = pack2<T>(s[mi][2 * kk][0], s[mi][2 * kk][1]);
          pa[mi][1] = pack2<T>(s[mi][2 * kk][2], s[mi][2 * kk][3]);
          pa[mi][2] = pack2<T>(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
          pa[mi][3] = pack2<T>(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < kDT / 2; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, v_frag.at(kk * 16, dp) + stage_off);
#pragma unroll
          for (int mi = 0; mi < kMT; ++mi) {
            mma_m16n8k16<T>(o[mi][2 * dp], pa[mi], b[0], b[1]);
            mma_m16n8k16<T>(o[mi][2 * dp + 1], pa[mi], b[2], b[3]);
          }
        }
      }
    }

    if constexpr (!kUnified) {
      break;
    } else {
      if (second_pass) break;
      // The range check of every row this thread holds (a quad shares a row): its max against
      // φ, a den that is finite and > 0, and an O row without Inf/NaN (one sum tests them all).
      bool bad = false;
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float m = st.m[mi][h], l = st.l[mi][h], osum = 0.f;
#pragma unroll
          for (int dj = 0; dj < kDT; ++dj) osum += o[mi][dj][2 * h] + o[mi][dj][2 * h + 1];
#pragma unroll
          for (int x = 1; x <= 2; x <<= 1) {
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, x));
            l += __shfl_xor_sync(0xffffffffu, l, x);
            osum += __shfl_xor_sync(0xffffffffu, osum, x);
          }
          const int row = warp_row0 + mi * 16 + g + h * 8;
          if (row < q_rows) {  // rows past T are never stored
            const int len = p.start_pos + q0 + row + 1;  // keys the causal row sees
            const float m_phi = m * p.scale_log2;  // m is biased: (max q·k)·scale_log2 - φ
            const UnifiedRange r = unified_range(kPRange<kDType>, len);
            const bool ok = m_phi >= r.lo && m_phi <= r.hi && l > 0.f && isfinite(l) &&
                            isfinite(osum);
            if (!ok) {
              bad = true;
              if (tig == 0 && p.fallbacks != nullptr) atomicAdd(p.fallbacks, 1u);
            }
            // A second pass's bias for this row, should there be one: φ = the row's exact max
            // placed in the middle of the range (m - φ = (lo + hi) / 2). Kept aside in shared
            // memory: holding it in registers across the vote spilled the d64 loop.
            if (tig == 0 && isfinite(m))
              row_bias[Cfg::kBlockM + mi * 16 + h * 8] =
                  row_bias[mi * 16 + h * 8] - (m - 0.5f * (r.lo + r.hi) / p.scale_log2);
          }
        }
      // Also the barrier before the second pass refills sK and sV (sQ is kept).
      if (!__syncthreads_or(bad)) break;
      second_pass = true;
      // The second pass's biases (the scores come out bit for bit the same again). Only the
      // quad's lane tig == 0 touches a row's entries until the next barrier.
      if (tig == 0)
#pragma unroll
        for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            row_bias[mi * 16 + h * 8] = row_bias[Cfg::kBlockM + mi * 16 + h * 8];
      const int key0 = (n_blocks - 1) * kBN;
      load_tile<Cfg, kBN>(sK, k + static_cast<int64_t>(key0) * kD, kD, kv_end - key0, tid);
      load_tile<Cfg, kBN>(sV, v + static_cast<int64_t>(key0) * kD, kD, kv_end - key0, tid);
      cp_async_commit();
    }
  }  // passes

  // Epilogue: O / l, rounded, staged through this warp's own rows of sQ (only this warp ever
  // reads them, and all its ldmatrix reads are done) so global stores are 16 bytes per lane.
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = st.l[mi][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      // l >= 1 for every real row (its max key contributes exp(0)) and, unified, l >= 2^a;
      // 0 only for rows past T.
      const float inv = softmax_inv_l(l);
      const int row = warp_row0 + mi * 16 + g + h * 8;
      if (p.last_row_max != nullptr) {  // uniform
        // The running max of q·k (sync), or a thread's max of the biased scores (unified).
        float m = st.m[mi][h];
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        if constexpr (kUnified) m -= row_bias[mi * 16 + h * 8];
        if (tig == 0 && q0 + row == p.T - 1) p.last_row_max[head] = m * p.scale_log2 * kLn2;
      }
#pragma unroll
      for (int dj = 0; dj < kDT; ++dj) {
        const uint32_t packed = pack2<T>(o[mi][dj][2 * h] * inv, o[mi][dj][2 * h + 1] * inv);
        const uint32_t addr = sQ + swizzle<kD>(row, dj) + tig * 4;
        st_shared_b32(addr, packed);
      }
    }
  __syncwarp();
  T* out = static_cast<T*>(p.out) + q_off;
#pragma unroll
  for (int i = 0; i < Cfg::kWarpRows * Cfg::kChunks / 32; ++i) {
    const int idx = lane + i * 32;
    const int row = warp_row0 + idx / Cfg::kChunks;
    const int chunk = idx % Cfg::kChunks;
    if (row < q_rows) {
      const uint4 val = ld_shared_v4_b32(sQ + swizzle<kD>(row, chunk));
      *reinterpret_cast<uint4*>(out + row * q_stride + chunk * 8) = val;
    }
  }
}

// The host launcher of one instantiation (house rule 2): grid (n_heads, ceil(T / kBlockM),
// batch), dynamic shared memory above the 48 KB default opted in per launch (cheap, and keeps
// no state).
template <class Cfg, DType kDType, SoftmaxPolicy kPolicy>
Status launch(const PrefillParams& p, cudaStream_t stream) {
  static_assert(Cfg::kWarpRows * Cfg::kChunks % 32 == 0, "epilogue copy must divide evenly");
  auto* kernel = &prefill_attention_kernel<Cfg, kDType, kPolicy>;
  const int n_q_tiles = (p.T + Cfg::kBlockM - 1) / Cfg::kBlockM;
  if (n_q_tiles > 65535 || p.batch < 1 || p.batch > 65535)
    return OutOfRange("prefill attention: T or batch too large for one launch");
  if (kPolicy == SoftmaxPolicy::kUnifiedMax && p.phi == nullptr)
    return Internal("prefill attention: unified softmax without φ");
  // Unified: the rows' biases (this pass's, the second pass's) after the tiles.
  constexpr size_t kSmem = Cfg::kSmemBytes + (kPolicy == SoftmaxPolicy::kUnifiedMax
                                                  ? 2 * Cfg::kBlockM * sizeof(float) : 0);
  FDPP_KERNEL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSmem)));
  const dim3 grid(static_cast<unsigned>(p.n_heads), static_cast<unsigned>(n_q_tiles),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Cfg::kThreads, kSmem, stream>>>(p);
  FDPP_KERNEL_CHECK_LAUNCH();
  return Status::Ok();
}

}  // namespace fdpp::cuda::prefill

namespace fdpp::cuda {
namespace prefill {

// Tile choice per head_dim: 4 warps x 32 rows = 128 query rows per CTA (as FlashAttention-2 on
// sm80/sm90), i.e. every K/V fragment read from smem feeds two m16 tiles. ptxas -v (sm_90 and
// sm_80 alike, no spills):
//  d128: 32 keys per stage: O 128 + S 32 fp32 registers; 255 regs (64 keys per stage needs
//        more and spills ~56 bytes); smem 32 KB Q + 2 x (8 + 8) KB K/V = 64 KB; 2 CTAs/SM.
//  d64:  64 keys per stage: O 64 + S 64; 237 regs; smem 48 KB; 2 CTAs/SM.
// Other shapes to try on the GPU are one line here: TileConfig<128, 4, 2, 64, 2> (fewer
// barriers and Q re-reads, small spill) or TileConfig<128, 8, 1, 64, 1> (180 regs, 16 rows
// per warp: smem-bandwidth bound).
template <int kHeadDim> struct DefaultConfig;
template <> struct DefaultConfig<64> { using type = TileConfig<64, 4, 2, 64, 2>; };
template <> struct DefaultConfig<128> { using type = TileConfig<128, 4, 2, 32, 2>; };

}  // namespace prefill

// Defined here, explicitly instantiated once per prefill_d*_*.cu file.
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Status launch_prefill_mma(const PrefillParams& p, cudaStream_t stream) {
  using Cfg = typename prefill::DefaultConfig<kHeadDim>::type;
  return prefill::launch<Cfg, kDType, kPolicy>(p, stream);
}

}  // namespace fdpp::cuda
