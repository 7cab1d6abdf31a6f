// Forwarding header: the split-KV arithmetic lives in dispatch/decode_splits.h (CUDA-free,
// beside the plan that uses it, dispatch/plan_decode.h). Kept so the kernel headers and the
// GPU tests that include this path, and spell `cuda::kDecodeMaxSplits`, compile unchanged.
#pragma once

#include "dispatch/decode_splits.h"

namespace fdpp::cuda {
using fdpp::kDecodeMaxSplits;
}  // namespace fdpp::cuda
