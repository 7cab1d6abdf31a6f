// plan_decode (src/dispatch/plan_decode.h) pinned by a table: (shape, traits, policy) ->
// the whole plan. Every expected plan is what b3ff36d chose (CudaBackend::decode_splits,
// decode_wide_tiles with dispatch/decode_splits.h, and decode.cpp's fast-kernel, tile, policy and
// unified-type choices, transcribed and run on these inputs), before the choice moved into
// plan_decode; the choices must not move.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dispatch/plan_decode.h"

namespace fdpp {
namespace {

// Occupancy inputs (CTAs per SM): generic; CUDA-core d64, d128, d256; tensor-core d64, d128.
// Distinct values, so a plan that read the wrong slot would show.
constexpr DecodeOccupancy kOccupancy = {3, 7, 6, 5, 2, 2};
const DecodeDeviceTraits kH200{90, 132, kOccupancy};
const DecodeDeviceTraits kA100{80, 108, kOccupancy};  // sm_80: no tensor-core kernel (no TMA)
constexpr DType kF16 = DType::kF16;
constexpr DType kBF16 = DType::kBF16;
constexpr bool kAligned = true;
constexpr bool kUnaligned = false;
constexpr SoftmaxPolicy kSync = SoftmaxPolicy::kSynchronized;
constexpr SoftmaxPolicy kUnified = SoftmaxPolicy::kUnifiedMax;

struct PlanRow {
  DecodeDeviceTraits traits;
  DecodeShape shape;
  DecodePolicy policy;
  DecodePlan want;
};

std::string describe(const PlanRow& r) {
  const DecodeShape& s = r.shape;
  return "sm_" + std::to_string(r.traits.sm_arch) + " B" + std::to_string(s.batch) + " " +
         std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) + " D" +
         std::to_string(s.head_dim) + " L" + std::to_string(s.max_length) + " " +
         dtype_name(s.dtype) + (s.aligned16 ? "" : " unaligned") +
         (s.softmax == kUnified ? " unified" : "") +
         " splits=" + std::to_string(r.policy.splits) +
         " tiles=" + std::to_string(static_cast<int>(r.policy.tiles));
}

// Llama-2-7B (32/32, d128) and GQA 32/8 at batch 1/8/64 and lengths 256..32768 on the H200
// and an A100; head_dim 64/256 and others (generic); unaligned pointers; GQA groups past 8
// heads per CTA; bf16; both softmax policies; the split and tile overrides.
const std::vector<PlanRow> kPlans = {
    {kH200, {1, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 1, 1, 2, 32, kSync, UnifiedType::kF16P, 33280}},
    {kH200, {1, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 32, kSync, UnifiedType::kF16P, 66560}},
    {kH200, {1, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 32, kSync, UnifiedType::kF16P, 66560}},
    {kH200, {1, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 32, kSync, UnifiedType::kF16P, 66560}},
    {kH200, {1, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 32, kSync, UnifiedType::kF16P, 66560}},
    {kH200, {8, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 3, 32, kSync, UnifiedType::kF16P, 3194880}},
    {kH200, {1, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 33280}},
    {kH200, {1, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 8, 32, kSync, UnifiedType::kF16P, 133120}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {1, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {1, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {8, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {8, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {8, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {8, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {8, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 32, kSync, UnifiedType::kF16P, 266240}},
    {kH200, {64, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {64, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kA100, {1, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 2, 32, kSync, UnifiedType::kF32, 33280}},
    {kA100, {1, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 8, 32, kSync, UnifiedType::kF32, 133120}},
    {kA100, {1, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 19, 32, kSync, UnifiedType::kF32, 316416}},
    {kA100, {1, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 20, 32, kSync, UnifiedType::kF32, 332800}},
    {kA100, {1, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 20, 32, kSync, UnifiedType::kF32, 332800}},
    {kA100, {8, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 2, 32, kSync, UnifiedType::kF32, 266240}},
    {kA100, {8, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 2, 32, kSync, UnifiedType::kF32, 266240}},
    {kA100, {8, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 5, 32, kSync, UnifiedType::kF32, 665600}},
    {kA100, {8, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 5, 32, kSync, UnifiedType::kF32, 665600}},
    {kA100, {8, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 5, 32, kSync, UnifiedType::kF32, 665600}},
    {kA100, {64, 32, 32, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 1, 32, kSync, UnifiedType::kF32, 0}},
    {kA100, {64, 32, 32, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 2, 32, kSync, UnifiedType::kF32, 2129920}},
    {kA100, {64, 32, 32, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 4, 32, kSync, UnifiedType::kF32, 4259840}},
    {kA100, {64, 32, 32, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 4, 32, kSync, UnifiedType::kF32, 4259840}},
    {kA100, {64, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 6, 32, kSync, UnifiedType::kF32, 6389760}},
    {kA100, {1, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 2, 32, kSync, UnifiedType::kF32, 33280}},
    {kA100, {1, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 8, 32, kSync, UnifiedType::kF32, 133120}},
    {kA100, {1, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 32, 32, kSync, UnifiedType::kF32, 532480}},
    {kA100, {1, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 64, 32, kSync, UnifiedType::kF32, 1064960}},
    {kA100, {1, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 79, 32, kSync, UnifiedType::kF32, 1314816}},
    {kA100, {8, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 2, 32, kSync, UnifiedType::kF32, 266240}},
    {kA100, {8, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 8, 32, kSync, UnifiedType::kF32, 1064960}},
    {kA100, {8, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 10, 32, kSync, UnifiedType::kF32, 1331200}},
    {kA100, {8, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 10, 32, kSync, UnifiedType::kF32, 1331200}},
    {kA100, {8, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 10, 32, kSync, UnifiedType::kF32, 1331200}},
    {kA100, {64, 32, 8, 128, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 1, 32, kSync, UnifiedType::kF32, 0}},
    {kA100, {64, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 1, 32, kSync, UnifiedType::kF32, 0}},
    {kA100, {64, 32, 8, 128, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 5, 32, kSync, UnifiedType::kF32, 5324800}},
    {kA100, {64, 32, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 5, 32, kSync, UnifiedType::kF32, 5324800}},
    {kA100, {64, 32, 8, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 5, 32, kSync, UnifiedType::kF32, 5324800}},
    {kH200, {1, 32, 32, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 32, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 64, kSync, UnifiedType::kF16P, 33792}},
    {kH200, {1, 32, 32, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 4, 64, kSync, UnifiedType::kF16P, 33792}},
    {kH200, {8, 32, 32, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 8, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 8, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 64, kSync, UnifiedType::kF16P, 135168}},
    {kH200, {1, 32, 8, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 64, kSync, UnifiedType::kF16P, 135168}},
    {kH200, {8, 32, 8, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 64, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 8, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 64, kSync, UnifiedType::kF16P, 135168}},
    {kH200, {8, 32, 8, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 64, kSync, UnifiedType::kF16P, 135168}},
    {kH200, {1, 32, 8, 256, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 16, 16, kSync, UnifiedType::kF32, 528384}},
    {kH200, {1, 32, 8, 256, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 82, 16, kSync, UnifiedType::kF32, 2707968}},
    {kH200, {8, 32, 8, 256, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 10, 16, kSync, UnifiedType::kF32, 2641920}},
    {kH200, {8, 32, 8, 256, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 10, 16, kSync, UnifiedType::kF32, 2641920}},
    {kH200, {1, 32, 8, 96, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 75264}},
    {kH200, {1, 32, 8, 96, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 49, 32, kSync, UnifiedType::kF32, 614912}},
    {kH200, {1, 32, 8, 80, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 5, 32, kSync, UnifiedType::kF32, 52736}},
    {kH200, {1, 32, 8, 80, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 49, 32, kSync, UnifiedType::kF32, 514560}},
    {kH200, {1, 32, 8, 8, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 1, 32, kSync, UnifiedType::kF32, 0}},
    {kH200, {1, 32, 8, 8, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 16, 32, kSync, UnifiedType::kF32, 20480}},
    {kA100, {1, 32, 32, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 1, 64, kSync, UnifiedType::kF32, 0}},
    {kA100, {1, 32, 32, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 16, 64, kSync, UnifiedType::kF32, 135168}},
    {kA100, {1, 32, 32, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 23, 64, kSync, UnifiedType::kF32, 194560}},
    {kA100, {8, 32, 32, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 1, 64, kSync, UnifiedType::kF32, 0}},
    {kA100, {8, 32, 32, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 5, 64, kSync, UnifiedType::kF32, 337920}},
    {kA100, {8, 32, 32, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 8, 64, kSync, UnifiedType::kF32, 540672}},
    {kA100, {1, 32, 8, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 1, 64, kSync, UnifiedType::kF32, 0}},
    {kA100, {1, 32, 8, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 16, 64, kSync, UnifiedType::kF32, 135168}},
    {kA100, {1, 32, 8, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 86, 64, kSync, UnifiedType::kF32, 726528}},
    {kA100, {8, 32, 8, 64, 256, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 1, 64, kSync, UnifiedType::kF32, 0}},
    {kA100, {8, 32, 8, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 11, 64, kSync, UnifiedType::kF32, 743424}},
    {kA100, {8, 32, 8, 64, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 11, 64, kSync, UnifiedType::kF32, 743424}},
    {kA100, {1, 32, 8, 256, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 16, 16, kSync, UnifiedType::kF32, 528384}},
    {kA100, {1, 32, 8, 256, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 67, 16, kSync, UnifiedType::kF32, 2212864}},
    {kA100, {8, 32, 8, 256, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 8, 16, kSync, UnifiedType::kF32, 2113536}},
    {kA100, {8, 32, 8, 256, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 25, 16, kSync, UnifiedType::kF32, 6604800}},
    {kA100, {1, 32, 8, 96, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 75264}},
    {kA100, {1, 32, 8, 96, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 40, 32, kSync, UnifiedType::kF32, 501760}},
    {kA100, {1, 32, 8, 80, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 5, 32, kSync, UnifiedType::kF32, 52736}},
    {kA100, {1, 32, 8, 80, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 40, 32, kSync, UnifiedType::kF32, 419840}},
    {kA100, {1, 32, 8, 8, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 1, 32, kSync, UnifiedType::kF32, 0}},
    {kA100, {1, 32, 8, 8, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 16, 32, kSync, UnifiedType::kF32, 20480}},
    {kH200, {1, 32, 8, 64, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 16, 32, kSync, UnifiedType::kF32, 135168}},
    {kH200, {1, 32, 8, 64, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 49, 32, kSync, UnifiedType::kF32, 414208}},
    {kH200, {8, 32, 8, 64, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 405504}},
    {kH200, {8, 32, 8, 64, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 405504}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 32, 32, kSync, UnifiedType::kF32, 532480}},
    {kH200, {1, 32, 8, 128, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 49, 32, kSync, UnifiedType::kF32, 815616}},
    {kH200, {8, 32, 8, 128, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 798720}},
    {kH200, {8, 32, 8, 128, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 798720}},
    {kH200, {1, 32, 8, 256, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 43, 32, kSync, UnifiedType::kF32, 1420288}},
    {kH200, {1, 32, 8, 256, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 49, 32, kSync, UnifiedType::kF32, 1618432}},
    {kH200, {8, 32, 8, 256, 4096, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 1585152}},
    {kH200, {8, 32, 8, 256, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 6, 32, kSync, UnifiedType::kF32, 1585152}},
    {kA100, {1, 32, 32, 128, 32768, kF16, kUnaligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 1, 1, 10, 32, kSync, UnifiedType::kF32, 166400}},
    {kH200, {1, 64, 8, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 8, 1, 16, 32, kSync, UnifiedType::kF16P, 532480}},
    {kH200, {1, 32, 2, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 16, 2, 32, 32, kSync, UnifiedType::kF16P, 532480}},
    {kH200, {4, 48, 3, 64, 4096, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 16, 2, 5, 64, kSync, UnifiedType::kF16P, 253440}},
    {kA100, {1, 32, 2, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 16, 2, 64, 32, kSync, UnifiedType::kF32, 1064960}},
    {kH200, {8, 32, 8, 128, 4096, kBF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 2, 32, kSync, UnifiedType::kBF16P, 266240}},
    {kH200, {8, 40, 40, 128, 8192, kF16, kAligned, kSync}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 2, 32, kSync, UnifiedType::kF16P, 332800}},
    {kH200, {1, 32, 8, 128, 1024, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 8, 32, kUnified, UnifiedType::kF16P, 133120}},
    {kH200, {8, 32, 32, 128, 32768, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kUnified, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 8, 64, 4096, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 64, kUnified, UnifiedType::kF16P, 135168}},
    {kH200, {1, 32, 8, 256, 4096, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 64, 16, kSync, UnifiedType::kF32, 2113536}},
    {kH200, {1, 32, 8, 96, 4096, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 22, 32, kUnified, UnifiedType::kF32, 275968}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kUnaligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 32, 32, kUnified, UnifiedType::kF32, 532480}},
    {kA100, {1, 32, 8, 128, 4096, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 32, 32, kUnified, UnifiedType::kF32, 532480}},
    {kA100, {1, 32, 8, 256, 4096, kF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 64, 16, kSync, UnifiedType::kF32, 2113536}},
    {kH200, {1, 32, 8, 128, 1024, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 8, 32, kUnified, UnifiedType::kBF16P, 133120}},
    {kH200, {8, 32, 32, 128, 32768, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kUnified, UnifiedType::kBF16P, 0}},
    {kH200, {1, 32, 8, 64, 4096, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 16, 64, kUnified, UnifiedType::kBF16P, 135168}},
    {kH200, {1, 32, 8, 256, 4096, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 64, 16, kSync, UnifiedType::kF32, 2113536}},
    {kH200, {1, 32, 8, 96, 4096, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 22, 32, kUnified, UnifiedType::kF32, 275968}},
    {kH200, {1, 32, 8, 128, 4096, kBF16, kUnaligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 32, 32, kUnified, UnifiedType::kF32, 532480}},
    {kA100, {1, 32, 8, 128, 4096, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 32, 32, kUnified, UnifiedType::kF32, 532480}},
    {kA100, {1, 32, 8, 256, 4096, kBF16, kAligned, kUnified}, {0, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 4, 1, 64, 16, kSync, UnifiedType::kF32, 2113536}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kAligned, kSync}, {40, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 40, 32, kSync, UnifiedType::kF16P, 665600}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kAligned, kSync}, {200, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 128, 32, kSync, UnifiedType::kF16P, 2129920}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kAligned, kSync}, {1, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCore, 4, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 8, 128, 1024, kF16, kAligned, kSync}, {8, DecodeTiles::kAuto},
     {DecodeKernel::kTensorCoreWide, 4, 1, 8, 32, kSync, UnifiedType::kF16P, 133120}},
    {kH200, {1, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kNarrow},
     {DecodeKernel::kTensorCore, 4, 1, 8, 32, kSync, UnifiedType::kF16P, 133120}},
    {kH200, {8, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kWide},
     {DecodeKernel::kTensorCoreWide, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {8, 32, 32, 128, 32768, kF16, kAligned, kSync}, {0, DecodeTiles::kNarrow},
     {DecodeKernel::kTensorCore, 1, 1, 1, 32, kSync, UnifiedType::kF16P, 0}},
    {kH200, {1, 32, 8, 64, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kWide},
     {DecodeKernel::kTensorCore, 4, 1, 4, 64, kSync, UnifiedType::kF16P, 33792}},
    {kH200, {1, 32, 8, 128, 1024, kF16, kUnaligned, kSync}, {0, DecodeTiles::kWide},
     {DecodeKernel::kGeneric, 4, 1, 8, 32, kSync, UnifiedType::kF32, 133120}},
    {kA100, {1, 32, 8, 128, 1024, kF16, kAligned, kSync}, {0, DecodeTiles::kWide},
     {DecodeKernel::kCudaCore, 4, 1, 8, 32, kSync, UnifiedType::kF32, 133120}},
    {kA100, {1, 32, 32, 128, 32768, kF16, kAligned, kSync}, {3, DecodeTiles::kAuto},
     {DecodeKernel::kCudaCore, 1, 1, 3, 32, kSync, UnifiedType::kF32, 50176}},
    {kH200, {1, 32, 8, 96, 4096, kF16, kAligned, kSync}, {5, DecodeTiles::kAuto},
     {DecodeKernel::kGeneric, 4, 1, 5, 32, kSync, UnifiedType::kF32, 62976}},
    {kH200, {1, 32, 8, 128, 4096, kF16, kAligned, kUnified}, {64, DecodeTiles::kWide},
     {DecodeKernel::kTensorCoreWide, 4, 1, 64, 32, kUnified, UnifiedType::kF16P, 1064960}},
};

TEST(PlanDecode, TableMatchesTheChoicesOfB3ff36d) {
  for (const PlanRow& r : kPlans) {
    Result<DecodePlan> got = plan_decode(r.shape, r.traits, r.policy);
    ASSERT_TRUE(got.ok()) << describe(r) << ": " << got.status().message();
    EXPECT_EQ(decode_kernel_name(got->kernel), std::string(decode_kernel_name(r.want.kernel)))
        << describe(r);
    EXPECT_EQ(got->group, r.want.group) << describe(r);
    EXPECT_EQ(got->head_groups, r.want.head_groups) << describe(r);
    EXPECT_EQ(got->splits, r.want.splits) << describe(r);
    EXPECT_EQ(got->tile_keys, r.want.tile_keys) << describe(r);
    EXPECT_EQ(got->softmax, r.want.softmax) << describe(r);
    EXPECT_EQ(got->unified_type, r.want.unified_type) << describe(r);
    EXPECT_EQ(got->workspace_bytes, r.want.workspace_bytes) << describe(r);
    EXPECT_TRUE(*got == r.want) << describe(r);
  }
}

// The split count and the kernel family never depend on the softmax policy: a graph captured
// with one plan serves both, and the comparison is fair.
TEST(PlanDecode, PolicyDoesNotMoveTheSplits) {
  for (const PlanRow& r : kPlans) {
    DecodeShape other = r.shape;
    other.softmax = r.shape.softmax == kSync ? kUnified : kSync;
    Result<DecodePlan> a = plan_decode(r.shape, r.traits, r.policy);
    Result<DecodePlan> b = plan_decode(other, r.traits, r.policy);
    ASSERT_TRUE(a.ok() && b.ok()) << describe(r);
    EXPECT_EQ(a->splits, b->splits) << describe(r);
    EXPECT_EQ(a->kernel, b->kernel) << describe(r);
    EXPECT_EQ(a->workspace_bytes, b->workspace_bytes) << describe(r);
  }
}

}  // namespace
}  // namespace fdpp
