// The CPU reference ops: plain fp32 loops, one op per file, each the
// specification its CUDA counterpart is tested against. f32 activations and
// weights, i32 ids/positions; everything else is refused with a Status.
//
// Accumulation: dot products (linear, attention scores) and reductions (rmsnorm,
// softmax) run in double, so the only fp32 rounding of a result is the final
// store; elementwise maths (RoPE, SiLU, the norm's scaling) is fp32, as in
// Hugging Face transformers.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace fdpp::cpu {

// The semantics of each op are those documented on Backend in backend/backend.h.
Status embed(const Tensor& ids /* i32 (T) */, const Tensor& table /* (V, H) */,
             const Tensor& out /* (T, H) */);
// out may be x itself (in place); any other overlap is refused.
Status rmsnorm(const Tensor& x /* (T, H) */, const Tensor& weight /* (H) */, float eps,
               const Tensor& out /* (T, H) */);
Status linear(const Tensor& x /* (M, K) */, const Tensor& w /* (N, K) */,
              const Tensor& y /* (M, N) */, const LinearEpilogue& ep);
Status rope_and_append_kv(const RopeAppendArgs& args);
Status attention_decode(const AttentionDecodeArgs& args);
Status attention_prefill(const AttentionPrefillArgs& args);
Status silu_mul(const Tensor& gate_up /* (M, 2F) */, const Tensor& out /* (M, F) */);
// out may be x itself (in place); any other overlap is refused.
Status layernorm(const Tensor& x /* (T, H) */, const Tensor& weight /* (H) */,
                 const Tensor& bias /* (H) */, float eps, const Tensor& out /* (T, H) */);
Status embed_add(const Tensor& ids /* i32 (T) */, const Tensor& table /* (V, H) */,
                 const Tensor& out /* (T, H) */);
// out may be x itself (in place).
Status activation(const Tensor& x /* (M, N) */, const Tensor& out /* (M, N) */, Activation act);
// NaN is never the max; an all-NaN row gives 0 (as does a row of equal values).
Status argmax(const Tensor& logits /* (B, V) */, const Tensor& ids /* i32 (B) */);

// ---- shared by the two attention ops (defined in attention_decode.cpp) ------

// head_dim bound of the CPU attention: its output accumulator lives on the stack,
// since an op allocates nothing.
constexpr int kMaxAttentionHeadDim = 1024;

// Below this many multiply-adds (about 1 ms on one core) an op runs on one thread:
// waking an OpenMP team costs more than a small op, and on a loaded machine a
// parallel region waits a whole time slice for a descheduled thread (it slowed
// stories260K prefill fiftyfold).
constexpr int64_t kParallelWork = int64_t{1} << 22;

// out = softmax(scale · k · q) · v over keys 0..n_keys-1 of one KV head, with
// the ordinary (synchronized, max-subtracted) softmax in double.
// q, out: (head_dim); k, v: (n_keys, head_dim), contiguous rows.
void attend_one_query(const float* q, const float* k, const float* v, int64_t n_keys, int head_dim,
                      float scale, float* out);

// The attention checks both ops share: q/out (rows, n_heads, head_dim) f32 on the
// host, cache valid for `layer`, n_heads a multiple of n_kv_heads. Sets *n_heads.
Status check_attention(const char* op, const Tensor& q, const Tensor& out, const KVCache* cache,
                       int layer, int64_t* n_heads);

// Σ a[i]·b[i] in double. A product of two floats is exact in double (24 + 24 < 53
// mantissa bits), so only the additions round. Four independent partial sums
// break the add-latency chain (and let the compiler pair them into SIMD lanes).
inline double dot(const float* a, const float* b, int64_t n) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(a[i]) * b[i];
    s1 += static_cast<double>(a[i + 1]) * b[i + 1];
    s2 += static_cast<double>(a[i + 2]) * b[i + 2];
    s3 += static_cast<double>(a[i + 3]) * b[i + 3];
  }
  for (; i < n; ++i) s0 += static_cast<double>(a[i]) * b[i];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace fdpp::cpu
