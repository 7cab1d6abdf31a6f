// Internal to attention/prefill*: the kernel parameter block and the per-instantiation
// launchers that prefill.cu's closed switch calls (house rule 4: each lives in its own .cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "dispatch/softmax_policy.h"
#include "dispatch/softmax_range.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// One launch = `batch` sequences (the engine passes one: a KV-cache slot of one layer).
struct PrefillParams {
  const void* q = nullptr;  // (batch, T, n_heads, head_dim)
  const void* k = nullptr;  // (n_kv_heads, capacity, head_dim): this layer's, this slot's keys
  const void* v = nullptr;  // (n_kv_heads, capacity, head_dim)
  void* out = nullptr;      // (batch, T, n_heads, head_dim)
  int T = 0;                // query tokens, at absolute positions start_pos .. start_pos+T-1
  int n_heads = 0;
  int group = 1;            // n_heads / n_kv_heads: query head h reads KV head h / group
  int capacity = 0;         // positions per KV head in the cache
  int start_pos = 0;        // keys 0 .. start_pos+T-1 are valid; later positions are stale
  float scale_log2 = 0.f;   // scale * log2(e): exp(scale*s) == exp2(scale_log2*s)
  // Sequence b of a batched launch (fdpp bench-attention) is at q/out + b·q_batch_stride and
  // k/v + b·kv_batch_stride elements (the next cache slot).
  int batch = 1;
  int64_t q_batch_stride = 0;
  int64_t kv_batch_stride = 0;
  // Unified-max softmax (design.md, Technique 1): the template policy of the tensor-core
  // kernels, a run-time switch of the generic one.
  SoftmaxPolicy policy = SoftmaxPolicy::kSynchronized;
  const float* phi = nullptr;      // (n_heads): φ of each query head, s units (s = scale·q·k)
  unsigned* fallbacks = nullptr;   // +1 per query row recomputed synchronized; nullptr: none
  // Either policy: max s of query row T-1 of each head, the row-following φ of the first
  // decode step (batch 1). nullptr: not written.
  float* last_row_max = nullptr;   // (n_heads)
};

// Tensor-core kernel, head_dim in {64, 128}; q/k/v/out 16-byte aligned (prefill_d*.cu).
template <DType kDType, int kHeadDim, SoftmaxPolicy kPolicy>
Status launch_prefill_mma(const PrefillParams& p, cudaStream_t stream);

// SIMT kernel for any even head_dim <= 256; 4-byte aligned pointers (prefill_generic.cu).
Status launch_prefill_generic(const PrefillParams& p, DType dtype, int head_dim,
                              cudaStream_t stream);

}  // namespace fdpp::cuda
