// Split-KV decode attention (FlashDecoding): one query token per sequence
// against that sequence's cached keys, each sequence's keys cut into
// num_splits contiguous ranges processed by separate CTAs, whose partial
// softmaxes a combine kernel merges.
//
// One CTA serves (split, KV head, sequence) and all the query heads of that KV
// head's GQA group (up to 8; larger groups take several CTAs), so each key and
// value is read from HBM once per group, not once per query head.
//
// Partial of split s for row (b, h), all fp32, all in log2 units so that the
// kernels use exp2 (one MUFU op): with t_j = scale·log2(e)·q·k_j over the
// split's keys j,
//   m = max_j t_j,  l = Σ_j 2^(t_j - m),  acc[d] = Σ_j 2^(t_j - m)·v_j[d];
// the row's output is Σ_s 2^(m_s - m*)·acc_s / Σ_s 2^(m_s - m*)·l_s with
// m* = max_s m_s (attention/combine.cu). An empty split (no keys) has m = -inf,
// l = 0 and an unwritten acc, which the combine skips.
//
// The unified-max kernels (SoftmaxPolicy::kUnifiedMax, issue 4) keep the same layout but
// make l and acc relative to the row's φ instead of the split's max (the tensor-core kernel
// rounds p to fp16/bf16 before it enters l and acc; DecodePlan::unified_type):
//   m = max_j t_j (for the range check only), l = Σ_j 2^(t_j - φ), acc = Σ_j 2^(t_j - φ)·v_j,
// so the combine just sums them (attention/combine_unified.cu) and recomputes, with the
// synchronized softmax, the splits of a row whose max leaves φ's safe range.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/launch.h"
#include "core/dtype.h"
#include "dispatch/plan_decode.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

struct DecodeParams {
  const void* q = nullptr;    // (batch, n_heads, head_dim)
  const void* k = nullptr;    // (n_slots, n_kv_heads, capacity, head_dim): one layer's keys
  const void* v = nullptr;    // (n_slots, n_kv_heads, capacity, head_dim): one layer's values
  const int32_t* slots = nullptr;    // (batch): cache slot of each sequence
  const int32_t* lengths = nullptr;  // (batch): keys 0..len-1 are attended
  void* out = nullptr;        // (batch, n_heads, head_dim)
  float* part_m = nullptr;    // (batch, n_heads, num_splits); unused when num_splits == 1
  float* part_l = nullptr;    // (batch, n_heads, num_splits)
  float* part_acc = nullptr;  // (batch, n_heads, num_splits, head_dim)
  int batch = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_slots = 0;
  int capacity = 0;
  int group = 1;        // n_heads / n_kv_heads: query head h reads KV head h / group (HF repeat_kv)
  // The plan's fields (decode_params_set_plan; dispatch/plan_decode.h decides them):
  int head_groups = 1;  // decode_head_groups(group): CTAs per KV head per split
  int num_splits = 1;   // 1: the split kernel writes out directly and no combine runs
  int tile_keys = 32;   // keys per split tile of the kernel that runs
  bool wide_tiles = false;  // tensor-core kernel at head_dim 128: 32-key warp tiles
  SoftmaxPolicy policy = SoftmaxPolicy::kSynchronized;
  int max_length = 0;   // the grid's bound on lengths (the plan's input); 0: unknown
  int sm_arch = 0;      // the device's compute capability × 10 (the tensor-core kernel checks it)
  float scale_log2 = 0.f;  // softmax scale · log2(e)
  // Unified-max softmax (kUnifiedMax kernels only):
  const float* phi = nullptr;  // (n_heads): φ of each query head, s units (s = scale·q·k)
  // (n_slots, n_heads): the last row max (s units) of each (slot, head); every unified row
  // writes its max here, and with `follow` a finite entry is that row's φ. nullptr: not kept.
  float* row_max = nullptr;
  int follow = 0;
  unsigned* fallbacks = nullptr;  // +1 per row recomputed synchronized; nullptr: not counted
};

// Whether q, k and v allow the fast kernels' 16-byte loads (DecodeShape::aligned16).
bool decode_pointers_aligned16(const DecodeParams& p);

// Copies the plan's decisions into the parameters the kernels read.
void decode_params_set_plan(const DecodePlan& plan, DecodeParams* p);

// Points part_m / part_l / part_acc into a workspace of plan.workspace_bytes
// (decode_workspace_layout); p->num_splits must be set.
void decode_workspace_assign(void* workspace, DecodeParams* p);

// Resident CTAs per SM of the synchronized instantiation of a kernel family
// (decode_kernel_family): the DecodeDeviceTraits the plan reads.
Result<int> decode_ctas_per_sm(DecodeKernel family, int head_dim, DType dtype);

// Launches the plan's split kernel (and the combine if plan.splits > 1) on `stream`.
// Checks the parameters it relies on (heads, grid limits, pointers, workspace, agreement
// with the plan); the shape's support is plan_decode's. Decides nothing, allocates nothing.
Status run_attention_decode(const DecodeParams& p, const DecodePlan& plan, DType dtype,
                            KernelStream stream);

// ---- per-instantiation launchers (decode_d*_*.cu, decode_generic_*.cu, combine.cu) ----
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Status launch_decode_split(const DecodeParams& p, KernelStream stream);
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Result<int> decode_split_occupancy();
// The tensor-core kernel (decode_mma_kernel.cuh, decode_mma_d*_*.cu): head_dim 64 and 128;
// kWide (8 KB warp tiles) only at head_dim 128 (decode_mma_d128w_*.cu).
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy, bool kWide>
Status launch_decode_mma(const DecodeParams& p, KernelStream stream);
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Result<int> decode_mma_occupancy();
template <DType kDType, SoftmaxPolicy kPolicy>
Status launch_decode_generic(const DecodeParams& p, KernelStream stream);
template <DType kDType, SoftmaxPolicy kPolicy>
Result<int> decode_generic_occupancy();
Status launch_decode_combine(const DecodeParams& p, DType dtype, KernelStream stream);
// The unified combine: sums the φ-relative partials, checks each row's range and recomputes
// the splits of a failing row in the same CTA (combine_unified.cu). `type` is the type the
// split kernel held P in (DecodePlan::unified_type): it sets the range and follow-φ's center.
Status launch_decode_combine_unified(const DecodeParams& p, DType dtype, UnifiedType type,
                                     KernelStream stream);

}  // namespace fdpp::cuda
