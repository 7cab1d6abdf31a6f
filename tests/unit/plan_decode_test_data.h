// The inputs both decode-plan tests build their cases from (test_plan_decode.cpp,
// test_plan_decode_table.cpp).
#pragma once

#include "dispatch/plan_decode.h"

namespace fdpp::plan_decode_test {

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

}  // namespace fdpp::plan_decode_test
