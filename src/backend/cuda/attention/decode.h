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
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/attention/softmax_policy.h"
#include "backend/cuda/attention/split_plan.h"
#include "core/dtype.h"
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
  int head_groups = 1;  // decode_head_groups(group): CTAs per KV head per split
  int num_splits = 1;   // 1: the split kernel writes out directly and no combine runs
  float scale_log2 = 0.f;  // softmax scale · log2(e)
};

// Bytes of fp32 partials for num_splits > 1 (0 for one split), and where the
// three arrays sit in such a workspace (each 256-byte aligned).
size_t decode_workspace_bytes(int batch, int n_heads, int head_dim, int num_splits);
void decode_workspace_assign(void* workspace, DecodeParams* p);

// The head_dim-templated kernel takes it (16-byte loads need 16-byte aligned
// q, out, k and v); otherwise the generic kernel does.
bool decode_uses_fast_kernel(const DecodeParams& p);

// Resident CTAs per SM of the kernel decode_uses_fast_kernel picks (feeds the split plan).
Result<int> decode_ctas_per_sm(int head_dim, bool fast_kernel, DType dtype);

// Launches the split kernel (and the combine if num_splits > 1) on `stream`.
// Checks the parameters it relies on (dtype, head_dim, grid limits, workspace);
// shapes are the caller's (CudaBackend::attention_decode). Allocates nothing.
Status run_attention_decode(const DecodeParams& p, DType dtype, cudaStream_t stream);

// ---- per-instantiation launchers (decode_d*_*.cu, decode_generic_*.cu, combine.cu) ----
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Status launch_decode_split(const DecodeParams& p, cudaStream_t stream);
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Result<int> decode_split_occupancy();
template <DType kDType, SoftmaxPolicy kPolicy>
Status launch_decode_generic(const DecodeParams& p, cudaStream_t stream);
template <DType kDType, SoftmaxPolicy kPolicy>
Result<int> decode_generic_occupancy();
Status launch_decode_combine(const DecodeParams& p, DType dtype, cudaStream_t stream);

}  // namespace fdpp::cuda
