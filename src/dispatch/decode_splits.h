// The split-KV arithmetic of decode attention: how many KV splits a launch uses, which keys
// each split covers, and the tile constants the kernels static_assert against. Pure and
// CUDA-free, so the CPU tests pin it down; plan_decode.h composes it into one DecodePlan.
//
// FlashDecoding's problem: one query token per sequence gives only
// batch × n_kv_heads CTAs (32 for Llama-2-7B at batch 1), far from filling 132
// SMs, so each sequence's keys are cut into `splits` contiguous ranges, one CTA
// each, and a combine kernel merges the partial softmaxes. More splits fill the
// GPU; too many make each CTA's fixed cost (loading q, the pipeline prologue,
// writing its fp32 partial) dominate its useful streaming.
//
// The grid is sized from max_length (fixed per captured CUDA graph); each CTA
// computes its key range from its own sequence's actual length, so one grid
// serves every step up to max_length and a short sequence just leaves splits empty.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace fdpp {

// Bytes of one K (or V) tile in shared memory in the fast decode kernel: 8 KB is
// 32 keys of head_dim 128 in f16/bf16; two stages of K and V make 32 KB of
// static shared memory per CTA, under the 48 KB static limit.
constexpr int kDecodeTileBytes = 8192;
// Keys per tile of the generic kernel (runtime head_dim).
constexpr int kDecodeGenericTileKeys = 32;
// Query heads one CTA carries (they share one KV head); a larger GQA group is
// cut into ceil(group / 8) CTAs per KV head, which re-read the same KV from L2.
constexpr int kDecodeMaxHeadsPerCta = 8;
// Upper bound of the split count (sizes the combine kernel's shared memory).
constexpr int kDecodeMaxSplits = 128;
// Largest head_dim any decode kernel takes.
constexpr int kDecodeMaxHeadDim = 256;

// The fast kernel exists for these head dims (template constants, house rule 4).
constexpr bool decode_head_dim_has_fast_kernel(int head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

// Which fast kernel serves head_dim 64/128: the tensor-core one (decode_mma_kernel.cuh: Q·K
// and P·V as mma.m16n8k16 with the group's query heads on the 8-wide side, TMA copies, 2
// CTAs/SM) wherever it can run, else the CUDA-core one (decode_kernel.cuh: 2·group·head_dim
// FMAs per key, 32 KB of shared memory, up to 7 CTAs/SM). The tensor-core kernel copies its
// tiles with TMA, which needs compute capability 9.0 (sm_arch = major · 10 + minor, 90 for
// the H200); an older GPU (A100: 80) runs the CUDA-core kernel at every shape.
// The tensor cores win every GQA configuration and, since the TMA maps promote L2 fills to
// 128 bytes (tensor_map.h), MHA at every length too, including batch × length >= 32K keys,
// where the CUDA-core kernel had been as fast or faster before (and served those shapes
// until then) (docs/experiments/log.md, "decode_splits.h: tensor cores or CUDA cores").
inline constexpr int kDecodeTensorCoreMinArch = 90;
constexpr bool decode_uses_tensor_cores(int sm_arch, int head_dim, bool fast_kernel) {
  return sm_arch >= kDecodeTensorCoreMinArch && fast_kernel && (head_dim == 64 || head_dim == 128);
}

// The tensor-core kernel's warp tile at head_dim 128: 16 keys (4 KB of K, 2 KB TMA boxes, 97 KB
// of shared memory per CTA, 2 CTAs/SM) or, wide, 32 keys (8 KB, 4 KB boxes, 193 KB, 1 CTA/SM).
// Wide tiles run where they were measured faster: splits of at most one wide tile per warp
// (128 keys: the kernel's first copies request the whole split, in half as many boxes and
// barrier waits) in a launch of at most one CTA per SM (a second wave would queue behind the
// first). Those launches ran faster with wide tiles; with 256-1024 keys per split wide lost,
// past 2048 the two ran even, and with more CTAs than SMs wide lost most
// (docs/experiments/log.md, "decode_splits.h: narrow or wide tiles").
struct DecodeMmaTileShape {
  int head_dim = 0;
  int64_t ctas = 0;    // the launch's CTAs: splits × batch × n_kv_heads × head groups
  int split_keys = 0;  // keys of a full split (decode_split_keys)
  int num_sms = 0;
};
constexpr int kDecodeWideTileKeys = 32;  // keys per wide warp tile at head_dim 128
constexpr bool decode_mma_wide_tiles(const DecodeMmaTileShape& s) {
  return s.head_dim == 128 && s.split_keys <= 4 * kDecodeWideTileKeys && s.ctas <= s.num_sms;
}

// Keys per shared-memory tile of the kernel that runs this head_dim (16-bit elements).
constexpr int decode_tile_keys(int head_dim, bool fast_kernel) {
  return fast_kernel ? kDecodeTileBytes / (head_dim * 2) : kDecodeGenericTileKeys;
}

// Query-head groups per KV head (CTAs that share one KV head's keys).
constexpr int decode_head_groups(int group) {
  return (group + kDecodeMaxHeadsPerCta - 1) / kDecodeMaxHeadsPerCta;
}

struct DecodeSplitOptions {
  int ctas_per_sm = 4;           // resident CTAs per SM (the kernel's occupancy)
  int keys_per_tile = 32;        // a split is a whole number of tiles
  int min_keys_per_split = 128;  // below this a CTA's fixed cost is not amortised
  int max_splits = kDecodeMaxSplits;
};

// Options for a head_dim: a split should stream at least 64 KB of K+V (128 keys
// at head_dim 128), enough to hide the ~µs fixed cost of a CTA.
constexpr DecodeSplitOptions decode_split_options(int head_dim, bool fast_kernel,
                                                  int ctas_per_sm) {
  DecodeSplitOptions o;
  o.ctas_per_sm = ctas_per_sm > 0 ? ctas_per_sm : 1;
  o.keys_per_tile = decode_tile_keys(head_dim, fast_kernel);
  const int by_bytes = head_dim > 0 ? 65536 / (4 * head_dim) : 128;  // K+V, 2 bytes each
  o.min_keys_per_split = std::max(o.keys_per_tile, by_bytes);
  return o;
}

// The tensor-core kernel's options: plan one CTA per SM (its occupancy is 2). Its CTAs
// stream fast enough that more of them only add partials and pipeline prologues: filling
// both slots of every SM measured slower than one CTA per SM, at GQA and MHA alike
// (docs/experiments/log.md, "decode_splits.h: one CTA per SM for the tensor cores").
constexpr DecodeSplitOptions decode_split_options_tensor_cores(int head_dim) {
  return decode_split_options(head_dim, /*fast_kernel=*/true, /*ctas_per_sm=*/1);
}

// Wave efficiency of `ctas` CTAs over `slots` resident CTA slots: the share of
// the last wave's slots that do work (1.0 when ctas is a multiple of slots).
inline double decode_wave_efficiency(int64_t ctas, int64_t slots) {
  if (ctas <= 0 || slots <= 0) return 0.0;
  const int64_t waves = (ctas + slots - 1) / slots;
  return static_cast<double>(ctas) / static_cast<double>(waves * slots);
}

// CTA fixed cost in key tiles (loading q, the pipeline prologue, writing the fp32
// partial), the price of one more split in the model below.
constexpr int kDecodeSplitOverheadTiles = 4;

// ctas_per_split: CTAs of one split index, i.e. batch × n_kv_heads × head groups.
// Returns the count in [1, cap] that minimises the modelled time waves × (tiles per
// split + kDecodeSplitOverheadTiles), the fewest splits on a tie; cap is the key tiles
// of max_length, max_length / min_keys_per_split and max_splits, so tiny contexts (< 2
// × min_keys_per_split) use 1. The model counts what the measurements showed
// (docs/experiments/log.md, "decode_splits.h: the split count model"): a count just short
// of a wave leaves SMs idle and cuts the tiles unevenly, a second wave queues behind the
// first, and a batch that fills 0.6 of a wave unsplit needs splits anyway.
inline int choose_decode_splits_for_ctas(int ctas_per_split, int max_length, int num_sms,
                                         const DecodeSplitOptions& o = {}) {
  if (ctas_per_split <= 0 || max_length <= 0 || num_sms <= 0) return 1;
  const int tile = std::max(1, o.keys_per_tile);
  const int tiles = (max_length + tile - 1) / tile;
  const int by_length = max_length / std::max(1, o.min_keys_per_split);
  const int cap = std::max(1, std::min({tiles, by_length, std::max(1, o.max_splits)}));
  const int64_t slots = static_cast<int64_t>(num_sms) * std::max(1, o.ctas_per_sm);
  int best = 1;
  int64_t best_cost = INT64_MAX;
  for (int s = 1; s <= cap; ++s) {
    const int64_t waves = (int64_t{ctas_per_split} * s + slots - 1) / slots;
    const int64_t cost = waves * ((tiles + s - 1) / s + kDecodeSplitOverheadTiles);
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

// The brief's form: batch × n_kv_heads CTAs per split (GQA groups of <= 8 heads).
inline int choose_decode_splits(int batch, int n_kv_heads, int max_length, int num_sms,
                                const DecodeSplitOptions& o = {}) {
  if (batch <= 0 || n_kv_heads <= 0) return 1;
  const int64_t ctas = int64_t{batch} * n_kv_heads;
  return choose_decode_splits_for_ctas(static_cast<int>(std::min<int64_t>(ctas, 1 << 30)),
                                       max_length, num_sms, o);
}

// The key range [begin, end) of split `split` of a sequence of `length` keys cut
// into `splits` pieces of whole tiles. The kernels compute exactly this (see
// attention/decode_common.cuh); the CPU tests check it covers every key once.
struct DecodeKeyRange {
  int begin = 0;
  int end = 0;
};
constexpr DecodeKeyRange decode_split_range(int length, int splits, int split, int tile_keys) {
  if (length <= 0 || splits <= 0) return {0, 0};
  const int per = (length + splits - 1) / splits;               // ceil: splits · per >= length
  const int chunk = (per + tile_keys - 1) / tile_keys * tile_keys;  // whole tiles
  const int64_t begin = int64_t{split} * chunk;
  if (begin >= length) return {length, length};
  const int64_t end = std::min<int64_t>(length, begin + chunk);
  return {static_cast<int>(begin), static_cast<int>(end)};
}

// Keys of a full split of `length` keys cut into `splits` (split 0's range: every other
// split has as many or fewer).
constexpr int decode_split_keys(int length, int splits, int tile_keys) {
  const DecodeKeyRange r = decode_split_range(length, splits, 0, tile_keys);
  return r.end - r.begin;
}

}  // namespace fdpp
