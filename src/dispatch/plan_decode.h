// The decode-attention launch decision as a pure function: for one query token per sequence
// against its cached keys, which kernel runs (generic, CUDA-core, tensor-core, tensor-core
// with wide warp tiles), how many KV splits, the keys per split tile, the softmax policy and
// the fp32 workspace the partials take. CUDA-free, so the CPU tests pin every choice down;
// the CUDA backend measures what only the device can tell (the kernels' occupancy) once,
// passes it in as DecodeDeviceTraits, and its launcher executes the plan it gets back.
//
// Graph safety: the plan depends on (shape, traits, policy) only, with max_length (the grid
// bound, fixed per captured graph) standing for the sequence lengths, so a replayed graph
// runs exactly the plan it was captured with.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "dispatch/decode_splits.h"
#include "dispatch/softmax_policy.h"
#include "dispatch/softmax_range.h"
#include "fdpp/status.h"

namespace fdpp {

// kGeneric: any even head_dim <= 256, 4-byte aligned pointers (decode_generic.cuh).
// kCudaCore: head_dim 64/128/256, 16-byte loads (decode_kernel.cuh).
// kTensorCore / kTensorCoreWide: head_dim 64/128 on sm_90+ (decode_mma_kernel.cuh); wide is
//   the 32-key warp tile at head_dim 128 (decode_splits.h, decode_mma_wide_tiles).
enum class DecodeKernel : uint8_t { kGeneric, kCudaCore, kTensorCore, kTensorCoreWide };
const char* decode_kernel_name(DecodeKernel k);  // "generic", "cuda-core", "mma", "mma-wide"

// The warp tiles of the tensor-core kernel at head_dim 128: kAuto follows the rule, the
// others force it (tests, bench-attention --tiles).
enum class DecodeTiles : uint8_t { kAuto, kNarrow, kWide };

struct DecodeShape {
  int batch = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int max_length = 0;  // the grid's bound on the sequence lengths
  DType dtype = DType::kF16;
  // q, k and v are 16-byte aligned: the fast kernels' 16-byte loads need it (an odd view
  // offset, possible only through a hand-made tensor, takes the generic kernel instead).
  bool aligned16 = true;
  SoftmaxPolicy softmax = SoftmaxPolicy::kSynchronized;  // requested
};

// Which occupancy a shape's split count reads: generic; CUDA-core d64, d128, d256; tensor-core
// d64, d128. The kernel family is known before the split count (only the wide/narrow tile
// choice follows it), so the backend measures just the slot a shape needs.
inline constexpr int kDecodeOccupancySlots = 6;
using DecodeOccupancy = std::array<int, kDecodeOccupancySlots>;  // CTAs per SM; 0: unknown

struct DecodeDeviceTraits {
  int sm_arch = 0;  // compute capability × 10 (90 for the H200)
  int num_sms = 0;
  // Resident CTAs per SM of each kernel's synchronized instantiation (the plan must not
  // depend on the softmax policy: a graph captured with one plan serves both, and their
  // comparison is fair). Unknown (0) counts as one.
  DecodeOccupancy ctas_per_sm{};
};

// What tests and benchmarks force.
struct DecodePolicy {
  int splits = 0;  // > 0: this split count (clamped to kDecodeMaxSplits); 0: the cost model
  DecodeTiles tiles = DecodeTiles::kAuto;
};

struct DecodePlan {
  DecodeKernel kernel = DecodeKernel::kGeneric;
  int group = 1;        // n_heads / n_kv_heads
  int head_groups = 1;  // CTAs per KV head per split (decode_head_groups)
  int splits = 1;       // 1: the split kernel writes out and no combine runs
  int tile_keys = 32;   // keys per split tile: a split is a whole number of them
  // What runs: the requested policy, except head_dim 256 on the CUDA-core kernel, which has
  // only the synchronized instantiation (exact either way).
  SoftmaxPolicy softmax = SoftmaxPolicy::kSynchronized;
  // The type the unified split kernel holds P in (fp16/bf16 on the tensor cores, fp32 on
  // the CUDA cores): the combine's range check and follow-φ's center depend on it.
  UnifiedType unified_type = UnifiedType::kF32;
  size_t workspace_bytes = 0;  // fp32 partials (decode_workspace_layout); 0 for one split
  bool operator==(const DecodePlan&) const = default;
};

// The kernel family a shape runs before the tile choice: kGeneric, kCudaCore or kTensorCore.
DecodeKernel decode_kernel_family(const DecodeShape& s, int sm_arch);
// Its slot in DecodeOccupancy.
int decode_occupancy_slot(DecodeKernel family, int head_dim);

// InvalidArgument for inconsistent heads or a negative batch / max_length; Unsupported for a
// dtype other than f16/bf16 or a head_dim no kernel takes (odd, or above kDecodeMaxHeadDim).
Result<DecodePlan> plan_decode(const DecodeShape& s, const DecodeDeviceTraits& traits,
                               const DecodePolicy& policy = {});

// The workspace a shape may need whichever kernel its pointers' alignment picks (both
// cases: reserve_decode_workspace runs before the pointers exist).
Result<size_t> decode_reserve_bytes(const DecodeShape& s, const DecodeDeviceTraits& traits,
                                    const DecodePolicy& policy = {});

// Where the three fp32 arrays of a num_splits > 1 workspace sit, each 256-byte aligned:
// m and l (batch, n_heads, splits), acc (batch, n_heads, splits, head_dim).
struct DecodeWorkspaceLayout {
  size_t m = 0, l = 0, acc = 0;  // byte offsets
  size_t bytes = 0;              // 0 for one split
};
DecodeWorkspaceLayout decode_workspace_layout(int batch, int n_heads, int head_dim,
                                              int num_splits);

}  // namespace fdpp
