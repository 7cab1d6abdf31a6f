// Prefill attention on the GPU: T query tokens of one sequence against that
// sequence's cached keys/values, causal, on tensor cores (mma.sync m16n8k16,
// fp32 accumulation), FlashAttention-2 style (the score matrix never leaves
// registers). head_dim 64/128 take the tensor-core kernel; any other even
// head_dim <= 256 takes a simple SIMT kernel (stories260K has head_dim 8).
// args.softmax selects the synchronized or the unified-max softmax (design.md, Technique 1).
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// Checks args (shapes, dtype, slot, start_pos + T <= capacity, n_heads % n_kv_heads)
// and launches on `stream`; asynchronous, allocates nothing.
//   args.q, args.out: (T, n_heads, head_dim) of `dtype`, device memory
//   args.cache:       K/V (n_layers, n_slots, n_kv_heads, capacity, head_dim) of `dtype`
// dtype: kF16 or kBF16. num_sms: the device's SM count (sizes the launch order).
Status run_attention_prefill(const AttentionPrefillArgs& args, DType dtype, int num_sms,
                             cudaStream_t stream);

// `batch` sequences of T tokens in one launch (fdpp bench-attention): args.q and args.out are
// (batch·T, n_heads, head_dim), sequence b in cache slot args.slot + b, all at start_pos.
Status run_attention_prefill_batched(const AttentionPrefillArgs& args, int batch, DType dtype,
                                     int num_sms, cudaStream_t stream);

}  // namespace fdpp::cuda
