// The decode plan (src/dispatch/plan_decode.h) and its split-KV arithmetic
// (src/dispatch/decode_splits.h) as pure functions: which kernel a launch runs, how many
// splits it gets, which keys each split covers, its softmax and its workspace. CUDA-free,
// so CI checks it without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/plan_decode.h"
#include "plan_decode_test_data.h"

namespace fdpp {
namespace {

constexpr int kH200Sms = 132;
constexpr int kA100Sms = 108;

int splits_for(int batch, int kv_heads, int max_length, int sms, int head_dim = 128,
               int ctas_per_sm = 4) {
  return choose_decode_splits(batch, kv_heads, max_length, sms,
                              decode_split_options(head_dim, /*fast_kernel=*/true, ctas_per_sm));
}

TEST(SplitPlan, OptionsFollowTheTile) {
  EXPECT_EQ(decode_tile_keys(64, true), 64);
  EXPECT_EQ(decode_tile_keys(128, true), 32);
  EXPECT_EQ(decode_tile_keys(256, true), 16);
  EXPECT_EQ(decode_tile_keys(8, false), kDecodeGenericTileKeys);
  // A split streams >= 64 KB of K+V, and is never shorter than one tile.
  EXPECT_EQ(decode_split_options(64, true, 4).min_keys_per_split, 256);
  EXPECT_EQ(decode_split_options(128, true, 4).min_keys_per_split, 128);
  EXPECT_EQ(decode_split_options(256, true, 4).min_keys_per_split, 64);
  EXPECT_EQ(decode_split_options(8, false, 4).min_keys_per_split, 65536 / 32);
  for (int d : {8, 64, 96, 128, 256}) {
    const bool fast = decode_head_dim_has_fast_kernel(d);
    const DecodeSplitOptions o = decode_split_options(d, fast, 0);
    EXPECT_GE(o.min_keys_per_split, o.keys_per_tile) << d;
    EXPECT_GE(o.ctas_per_sm, 1) << "an unknown occupancy still counts one CTA per SM";
  }
}

TEST(SplitPlan, HeadGroups) {
  EXPECT_EQ(decode_head_groups(1), 1);
  EXPECT_EQ(decode_head_groups(8), 1);
  EXPECT_EQ(decode_head_groups(9), 2);
  EXPECT_EQ(decode_head_groups(16), 2);
  EXPECT_EQ(decode_head_groups(17), 3);
}

TEST(SplitPlan, DegenerateInputsGiveOneSplit) {
  EXPECT_EQ(splits_for(0, 32, 4096, kH200Sms), 1);
  EXPECT_EQ(splits_for(1, 0, 4096, kH200Sms), 1);
  EXPECT_EQ(splits_for(1, 32, 0, kH200Sms), 1);
  EXPECT_EQ(splits_for(1, 32, -5, kH200Sms), 1);
  EXPECT_EQ(splits_for(1, 32, 4096, 0), 1);
}

TEST(SplitPlan, TinyContextsUseOneSplit) {
  // Below two minimum-size splits there is nothing worth cutting, however idle the GPU.
  for (int batch : {1, 3, 8, 64})
    for (int heads : {1, 4, 8, 32})
      for (int len : {1, 2, 63, 65, 97, 128, 255}) {
        EXPECT_EQ(splits_for(batch, heads, len, kH200Sms), 1)
            << "batch " << batch << " heads " << heads << " len " << len;
        EXPECT_EQ(splits_for(batch, heads, len, kH200Sms, /*head_dim=*/64), 1);
      }
}

TEST(SplitPlan, NeverMoreSplitsThanTilesOrTheCap) {
  for (int d : {64, 128, 256})
    for (int batch : {1, 2, 3, 8, 64})
      for (int heads : {1, 2, 8, 32})
        for (int len : {1, 17, 100, 256, 1000, 1025, 4096, 32768, 131072}) {
          const DecodeSplitOptions o = decode_split_options(d, true, 4);
          const int s = choose_decode_splits(batch, heads, len, kH200Sms, o);
          const int tiles = (len + o.keys_per_tile - 1) / o.keys_per_tile;
          EXPECT_GE(s, 1);
          EXPECT_LE(s, tiles) << "a split must own at least one tile";
          EXPECT_LE(s, kDecodeMaxSplits);
          EXPECT_LE(s, std::max(1, len / o.min_keys_per_split))
              << "every split keeps at least min_keys_per_split keys";
        }
}

TEST(SplitPlan, FillsTheGpuAtLongContexts) {
  // Batch 1 of Llama-2-7B (32 KV heads) or a GQA model (8): 32 or 8 CTAs
  // unsplit. At long contexts the splits must put work on every SM and keep
  // the last wave mostly full.
  for (int sms : {kA100Sms, kH200Sms})
    for (int heads : {8, 32})
      for (int len : {8192, 32768}) {
        const int ctas_per_sm = 4;
        const int s = splits_for(1, heads, len, sms, 128, ctas_per_sm);
        const int64_t ctas = int64_t{heads} * s;
        EXPECT_GE(ctas, sms) << "heads " << heads << " len " << len << " splits " << s;
        EXPECT_GE(decode_wave_efficiency(ctas, int64_t{sms} * ctas_per_sm), 0.8)
            << "heads " << heads << " len " << len << " splits " << s;
      }
}

TEST(SplitPlan, FullBatchesNeedNoSplit) {
  // 64 × 32 = 2048 CTAs are ~3.9 waves of 4 CTAs on 132 SMs already.
  EXPECT_EQ(splits_for(64, 32, 4096, kH200Sms), 1);
  // Batch 8 × 32 heads = 256 CTAs, half a wave: two splits make it 0.97 of one.
  EXPECT_EQ(splits_for(8, 32, 32768, kH200Sms), 2);
}

TEST(SplitPlan, SplitCountFollowsTheCostModel) {
  // One wave: 528 slots / 32 CTAs = 16 (not 15, which cut 32768 keys into uneven tiles
  // and measured slower: docs/experiments/log.md, "decode_splits.h: the split count model"),
  // capped by the length.
  EXPECT_EQ(splits_for(1, 32, 32768, kH200Sms), 16);
  EXPECT_EQ(splits_for(1, 32, 1024, kH200Sms), 8);  // 1024 / 128 keys
  EXPECT_EQ(splits_for(1, 32, 1000, kH200Sms), 7);  // 1000 / 128 keys
  // Llama-2-13B at batch 8: 320 CTAs are 0.6 of a wave; 3 splits make two fuller waves.
  EXPECT_EQ(splits_for(8, 40, 8192, kH200Sms), 3);
}

TEST(SplitPlan, TensorCoreKernelPlansOneCtaPerSm) {
  const DecodeSplitOptions o = decode_split_options_tensor_cores(128);
  EXPECT_EQ(o.ctas_per_sm, 1);
  EXPECT_EQ(o.keys_per_tile, decode_tile_keys(128, true));
  // Batch 1: 8 KV heads (GQA 32/8) -> 16 splits; 32 heads -> 4; batch 8 × 32 heads -> 1.
  EXPECT_EQ(choose_decode_splits(1, 8, 8192, kH200Sms, o), 16);
  EXPECT_EQ(choose_decode_splits(1, 32, 1024, kH200Sms, o), 4);
  EXPECT_EQ(choose_decode_splits(8, 32, 1024, kH200Sms, o), 1);
}

TEST(SplitPlan, WaveEfficiency) {
  EXPECT_DOUBLE_EQ(decode_wave_efficiency(528, 528), 1.0);
  EXPECT_DOUBLE_EQ(decode_wave_efficiency(264, 528), 0.5);
  EXPECT_DOUBLE_EQ(decode_wave_efficiency(529, 528), 529.0 / 1056.0);
  EXPECT_DOUBLE_EQ(decode_wave_efficiency(0, 528), 0.0);
}

// The kernels compute each CTA's keys with decode_split_range: the splits of
// one sequence must tile [0, length) exactly, in order, each starting on a tile
// boundary, however the length relates to the split count.
TEST(SplitPlan, SplitRangesCoverEveryKeyOnce) {
  for (int tile : {16, 32, 64})
    for (int splits = 1; splits <= 40; ++splits)
      for (int len = 0; len <= 700; ++len) {
        int next = 0;
        for (int s = 0; s < splits; ++s) {
          const DecodeKeyRange r = decode_split_range(len, splits, s, tile);
          ASSERT_LE(r.begin, r.end);
          if (r.begin == r.end) continue;  // an empty split, at the tail
          ASSERT_EQ(r.begin, next) << "tile " << tile << " splits " << splits << " len " << len
                                   << " split " << s;
          ASSERT_EQ(r.begin % tile, 0);
          ASSERT_LE(r.end, len);
          next = r.end;
        }
        ASSERT_EQ(next, len) << "tile " << tile << " splits " << splits << " len " << len;
      }
}

TEST(SplitPlan, EmptySplitsOnlyAtTheTail) {
  // Short sequences in a grid sized for a long max_length leave the last splits empty.
  const int splits = 16, tile = 32;
  const int len = 65;  // 3 tiles: splits 0..2 hold keys, 3..15 are empty
  int non_empty = 0;
  bool seen_empty = false;
  for (int s = 0; s < splits; ++s) {
    const DecodeKeyRange r = decode_split_range(len, splits, s, tile);
    if (r.begin < r.end) {
      EXPECT_FALSE(seen_empty) << "a split with keys after an empty one";
      ++non_empty;
    } else {
      seen_empty = true;
    }
  }
  EXPECT_EQ(non_empty, 3);
}

TEST(SplitPlan, TensorCoreKernelWhereverItRuns) {
  // GQA and MHA alike, whatever the work (MHA at batch × length >= 32K keys went to the
  // CUDA-core kernel until the TMA maps' 128-byte L2 promotion made the tensor cores faster).
  EXPECT_TRUE(decode_uses_tensor_cores(90, 128, true));
  EXPECT_TRUE(decode_uses_tensor_cores(90, 64, true));
  EXPECT_TRUE(decode_uses_tensor_cores(100, 128, true));
  // No tensor-core kernel before Hopper (its tiles come by TMA).
  EXPECT_FALSE(decode_uses_tensor_cores(80, 128, true));
  EXPECT_FALSE(decode_uses_tensor_cores(0, 128, true));
  // No tensor-core kernel for other head dims, nor for unaligned (generic) launches.
  EXPECT_FALSE(decode_uses_tensor_cores(90, 256, true));
  EXPECT_FALSE(decode_uses_tensor_cores(90, 128, false));
}

// The wide warp tiles: short splits in one wave, at head_dim 128 only; the plan's own
// splits give the configurations of the rule's measurement (decode_splits.h).
TEST(SplitPlan, WideTilesForShortSplitsInOneWave) {
  const DecodeSplitOptions o = decode_split_options_tensor_cores(128);
  const int tile = decode_tile_keys(128, true);
  const auto wide = [&](int batch, int kv_heads, int length, int head_dim = 128) {
    const int s = choose_decode_splits(batch, kv_heads, length, kH200Sms, o);
    DecodeMmaTileShape t;
    t.head_dim = head_dim;
    t.ctas = int64_t{s} * batch * kv_heads;
    t.split_keys = decode_split_keys(length, s, tile);
    t.num_sms = kH200Sms;
    return decode_mma_wide_tiles(t);
  };
  EXPECT_TRUE(wide(1, 8, 128));     // one split of 128 keys, 8 CTAs
  EXPECT_TRUE(wide(1, 8, 1024));    // 8 splits of 128 keys, 64 CTAs
  EXPECT_TRUE(wide(1, 32, 512));    // 4 splits of 128 keys, 128 CTAs
  EXPECT_TRUE(wide(4, 32, 128));    // 128 CTAs
  EXPECT_FALSE(wide(8, 32, 128));   // 256 CTAs: two waves at one CTA per SM
  EXPECT_FALSE(wide(1, 32, 1024));  // 4 splits of 256 keys
  EXPECT_FALSE(wide(8, 8, 32768));  // 2 splits of 16384 keys
  EXPECT_FALSE(wide(1, 8, 128, 64));  // head_dim 64 has the narrow tiles only
  EXPECT_EQ(decode_split_keys(1024, 8, 32), 128);
  EXPECT_EQ(decode_split_keys(1000, 3, 32), 352);  // ceil(1000 / 3) = 334, whole tiles
  EXPECT_EQ(decode_split_keys(20, 4, 32), 20);     // one short split holds every key
  EXPECT_EQ(decode_split_keys(0, 4, 32), 0);
}

// ---- plan_decode -------------------------------------------------------------------------
// The table of (shape, traits, policy) -> plan that pins the choices down:
// test_plan_decode_table.cpp.

using namespace plan_decode_test;  // kOccupancy, kH200, kA100, kF16, kSync, ...

// The occupancy slot of each family, and that only the slot a shape names is read.
TEST(PlanDecode, OccupancySlots) {
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kGeneric, 96), 0);
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kCudaCore, 64), 1);
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kCudaCore, 128), 2);
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kCudaCore, 256), 3);
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kTensorCore, 64), 4);
  EXPECT_EQ(decode_occupancy_slot(DecodeKernel::kTensorCore, 128), 5);
  DecodeShape s{1, 32, 32, 128, 32768, kF16, kAligned, kSync};
  EXPECT_EQ(decode_kernel_family(s, 80), DecodeKernel::kCudaCore);
  EXPECT_EQ(decode_kernel_family(s, 90), DecodeKernel::kTensorCore);
  s.aligned16 = false;
  EXPECT_EQ(decode_kernel_family(s, 90), DecodeKernel::kGeneric);
  // Only slot 2 (CUDA-core d128) feeds this A100 plan: the others may be unknown.
  DecodeDeviceTraits t{80, 108, {}};
  t.ctas_per_sm[2] = 6;
  s.aligned16 = true;
  Result<DecodePlan> a = plan_decode(s, t);
  Result<DecodePlan> b = plan_decode(s, kA100);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a == *b);
  // An unknown occupancy counts one CTA per SM, like decode_split_options.
  Result<DecodePlan> unknown = plan_decode(s, DecodeDeviceTraits{80, 108, {}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->splits, choose_decode_splits(1, 32, 32768, 108,
                                                  decode_split_options(128, true, 1)));
}

struct ReserveRow {
  DecodeDeviceTraits traits;
  DecodeShape shape;
  int splits_override;
  size_t want;
};

// reserve_decode_workspace's bytes: the larger of the two alignment cases (b3ff36d's values).
TEST(PlanDecode, ReserveCoversBothAlignments) {
  const std::vector<ReserveRow> rows = {
        {kH200, {1, 32, 8, 128, 32768}, 0, 815616},
        {kH200, {8, 32, 32, 128, 32768}, 0, 399360},
        {kH200, {1, 32, 32, 64, 4096}, 0, 101376},
        {kH200, {1, 32, 8, 256, 32768}, 0, 2707968},
        {kH200, {1, 32, 8, 96, 32768}, 0, 614912},
        {kA100, {1, 32, 32, 128, 32768}, 0, 332800},
        {kA100, {64, 32, 32, 128, 4096}, 0, 4259840},
        {kH200, {2, 32, 8, 128, 4096}, 16, 532480},
  };
  for (const ReserveRow& r : rows) {
    DecodePolicy policy;
    policy.splits = r.splits_override;
    Result<size_t> got = decode_reserve_bytes(r.shape, r.traits, policy);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, r.want) << "B" << r.shape.batch << " D" << r.shape.head_dim << " L"
                            << r.shape.max_length;
    // Never less than the plan of either alignment.
    for (const bool aligned : {false, true}) {
      DecodeShape s = r.shape;
      s.aligned16 = aligned;
      Result<DecodePlan> p = plan_decode(s, r.traits, policy);
      ASSERT_TRUE(p.ok());
      EXPECT_GE(*got, p->workspace_bytes);
    }
  }
}

TEST(PlanDecode, WorkspaceLayout) {
  // 32 rows of (m, l) take 128 bytes each, padded to 256; acc 32 × 128 floats.
  const DecodeWorkspaceLayout w = decode_workspace_layout(1, 8, 128, 4);
  EXPECT_EQ(w.m, 0u);
  EXPECT_EQ(w.l, 256u);
  EXPECT_EQ(w.acc, 512u);
  EXPECT_EQ(w.bytes, 512u + 32u * 128u * 4u);
  EXPECT_EQ(decode_workspace_layout(1, 8, 128, 1).bytes, 0u) << "one split writes out directly";
  EXPECT_EQ(decode_workspace_layout(0, 8, 128, 4).bytes, 0u);
  // Each array 256-byte aligned whatever the row count.
  const DecodeWorkspaceLayout odd = decode_workspace_layout(3, 5, 96, 7);
  EXPECT_EQ(odd.l % 256, 0u);
  EXPECT_EQ(odd.acc % 256, 0u);
  EXPECT_GE(odd.l, 3u * 5 * 7 * 4);
  EXPECT_GE(odd.bytes - odd.acc, 3u * 5 * 7 * 96 * 4);
}

// What no decode kernel takes is refused by the plan, with the codes the launcher used.
TEST(PlanDecode, RefusesWhatNoKernelTakes) {
  const auto code = [](DecodeShape s) { return plan_decode(s, kH200).status().code(); };
  const DecodeShape ok{1, 32, 8, 128, 4096, kF16, kAligned, kSync};
  EXPECT_TRUE(plan_decode(ok, kH200).ok());
  DecodeShape s = ok;
  s.head_dim = 7;  // odd: the kernels load element pairs
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s.head_dim = 258;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s.head_dim = 0;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s = ok;
  s.dtype = DType::kF32;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s = ok;
  s.n_kv_heads = 6;  // 32 heads are not a multiple of 6
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s.n_kv_heads = 0;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = ok;
  s.batch = -1;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  // Batch 0 is a valid (empty) launch: one split, no workspace.
  s = ok;
  s.batch = 0;
  Result<DecodePlan> empty = plan_decode(s, kH200);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->splits, 1);
  EXPECT_EQ(empty->workspace_bytes, 0u);
}

TEST(PlanDecode, KernelNames) {
  EXPECT_STREQ(decode_kernel_name(DecodeKernel::kGeneric), "generic");
  EXPECT_STREQ(decode_kernel_name(DecodeKernel::kCudaCore), "cuda-core");
  EXPECT_STREQ(decode_kernel_name(DecodeKernel::kTensorCore), "mma");
  EXPECT_STREQ(decode_kernel_name(DecodeKernel::kTensorCoreWide), "mma-wide");
}

}  // namespace
}  // namespace fdpp
