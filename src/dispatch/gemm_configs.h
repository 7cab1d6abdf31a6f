// The compiled GEMM kernels described as plain constants: the planner
// (dispatch/gemm_plan.h, CUDA-free, tested in CI) and the kernels
// (backend/cuda/gemm/) read the same table, so a tile the planner sizes
// splits for is the tile the kernel runs.
//
// y[M, N] (+)= x[M, K] · W[N, K]ᵀ (+ bias[N]); "rows" are rows of W (= columns of y).
#pragma once

#include <cstdint>

namespace fdpp {

// ---- ImplA: GEMV on CUDA cores (backend/cuda/gemm/gemv_kernel.cuh) ---------------
struct GemvConfig {
  static constexpr int kMaxM = 8;
  static constexpr int kWarps = 4;        // 128 threads per CTA
  static constexpr int kRowsPerWarp = 4;  // rows a warp streams side by side
  static constexpr int kRowsPerCta = kWarps * kRowsPerWarp;  // the CTA's tile of W rows
  // The CTA's x slice (M, k_split) lives in shared memory; this caps k_split.
  static constexpr int kMaxXBytes = 32 * 1024;
  // 16-byte loads per lane per row per round: with R rows that is 16 (M <= 4) or
  // 8 (M > 4, where the M·R accumulators need the registers) loads in flight.
  static constexpr int chunks_per_lane(int m) { return m <= 4 ? 4 : 2; }
  // K elements a warp covers per round: 32 lanes × chunks × 8 elements.
  static constexpr int k_round(int m) { return 32 * chunks_per_lane(m) * 8; }
  // Weight bytes in flight per CTA while a round's loads are outstanding.
  static constexpr int inflight_bytes(int m) {
    return kWarps * 32 * kRowsPerWarp * chunks_per_lane(m) * 16;
  }
};

// ---- ImplB: flat GEMM on tensor cores (backend/cuda/gemm/flat_gemm_kernel.cuh) ------
// A CTA owns block_n rows of W and all M columns of y over one K split. Its
// warps form a warps_n × warps_k grid: warps_n side by side along N (block_n /
// warps_n rows each, a multiple of 16: the mma's A side), warps_k splitting
// each stage's block_k (reduced through shared memory at the end). x is padded
// to whole n8 tiles (the mma's B side), at most max_m_tiles of them.
struct FlatConfigDesc {
  const char* name;
  int block_n;
  int block_k;
  int warps_n;
  int warps_k;
  int stages;       // cp.async ring depth: stages - 1 tiles are in flight while one is used
  int max_m_tiles;  // n8 tiles of x: M <= 8 * max_m_tiles

  constexpr int threads() const { return 32 * warps_n * warps_k; }
  constexpr int max_m() const { return 8 * max_m_tiles; }
  constexpr int warp_rows() const { return block_n / warps_n; }
  constexpr int warp_k() const { return block_k / warps_k; }
  constexpr int x_rows() const { return 8 * max_m_tiles; }
  // One pipeline stage: the W tile (block_n, block_k) and the x tile (x_rows, block_k), 16-bit.
  constexpr int stage_bytes() const { return (block_n + x_rows()) * block_k * 2; }
  constexpr int weight_tile_bytes() const { return block_n * block_k * 2; }
  // The end-of-split reduction tile (x_rows, block_n + 4) fp32 reuses the stages.
  constexpr int reduce_bytes() const { return x_rows() * (block_n + 4) * 4; }
  constexpr int smem_bytes() const {
    return stages * stage_bytes() > reduce_bytes() ? stages * stage_bytes() : reduce_bytes();
  }
  constexpr int inflight_bytes() const { return (stages - 1) * weight_tile_bytes(); }
};

// The closed set. Each is compiled for f16 and bf16, one instantiation per file
// (flat_gemm_<name>_<dtype>.cu). Why these:
//  0 n64k128s4m8   M <= 8, the decode batch: 4 warps each own 16 rows × all of BK,
//                  72 KB of smem → 3 CTAs/SM on Hopper, 144 KB of W in flight per SM.
//  1 n32k256s4m8   M <= 8 on the small-N shapes (O, down: N = 4096): half the rows
//                  per CTA doubles the CTAs before split-K; 2×2 warps (K split inside).
//  2 n64k128s4m16  M <= 16 (two n8 tiles).
//  3 n64k128s4m32  M <= 32: 2×2 warps, 32 rows per warp so each x fragment from
//                  shared memory feeds two mma's (shared-memory bandwidth grows with M).
//  4 n128k64s4m64  M <= 64: 32 rows per warp, 64 fp32 accumulators per thread.
// Above M = 64 the GEMM is no longer flat (tensor cores, not HBM, bound it) and
// cuBLASLt takes over.
inline constexpr FlatConfigDesc kFlatConfigs[] = {
    {"n64k128s4m8", 64, 128, 4, 1, 4, 1},
    {"n32k256s4m8", 32, 256, 2, 2, 4, 1},
    {"n64k128s4m16", 64, 128, 4, 1, 4, 2},
    {"n64k128s4m32", 64, 128, 2, 2, 4, 4},
    {"n128k64s4m64", 128, 64, 4, 1, 4, 8},
};
inline constexpr int kFlatConfigCount =
    static_cast<int>(sizeof(kFlatConfigs) / sizeof(kFlatConfigs[0]));
inline constexpr int kFlatMaxM = 64;

// Checks every descriptor against what the kernel's fragment and copy layouts assume.
constexpr bool flat_config_is_valid(const FlatConfigDesc& c) {
  return c.block_n % (16 * c.warps_n) == 0 &&      // warp rows: whole 16-row A tiles
         c.block_k % (32 * c.warps_k) == 0 &&      // warp K: whole k32 steps (ldmatrix.x4 of x)
         c.block_k >= 64 &&                        // the XOR swizzle permutes 8 16-byte chunks
         (c.block_n * c.block_k / 8) % c.threads() == 0 &&  // every thread copies as many W chunks
         c.stages >= 2 && c.max_m_tiles >= 1 && c.max_m() <= kFlatMaxM &&
         c.smem_bytes() <= 227 * 1024;  // sm_90's per-CTA opt-in limit (sm_80: 163 KB)
}
static_assert([] {
  for (const FlatConfigDesc& c : kFlatConfigs)
    if (!flat_config_is_valid(c)) return false;
  return true;
}(), "a flat GEMM configuration breaks a layout assumption of flat_gemm_kernel.cuh");

// True when configuration `index` is called `name`: each instantiation file
// asserts the configuration its file name promises, so reordering the table
// cannot silently swap kernels.
constexpr bool flat_config_named(int index, const char* name) {
  if (index < 0 || index >= kFlatConfigCount) return false;
  const char* a = kFlatConfigs[index].name;
  while (*a != 0 && *a == *name) ++a, ++name;
  return *a == *name;
}

// ---- split-K workspace (owned by the backend's GemmDispatcher, fixed size) ----------
// fp32 partials (splits, M, N) and one arrival counter per output tile.
inline constexpr int64_t kSplitKPartialBytes = int64_t{16} << 20;
inline constexpr int kSplitKCounters = 1 << 16;
inline constexpr int kMaxSplitK = 16;

}  // namespace fdpp
