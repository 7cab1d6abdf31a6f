// The elementwise / row-wise CUDA ops: one params struct and one host launcher
// each (house rule 2), one op per file (ops/<op>.cu). Launchers pick the launch
// configuration, check the launch and return a Status; they allocate nothing
// and do not validate shapes (CudaBackend does, against the op contract).
// dtype is the activation dtype: f16 or bf16 (argmax also takes f32 logits).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/launch.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// out[t, :] = table[ids[t], :]; an id outside [0, vocab) gives a row of zeros
// (the engine validates ids on the host; this only keeps the read in bounds).
struct EmbeddingParams {
  const int32_t* ids = nullptr;  // (n_tokens)
  const void* table = nullptr;   // (vocab, hidden)
  void* out = nullptr;           // (n_tokens, hidden)
  int64_t n_tokens = 0;
  int64_t vocab = 0;
  int64_t hidden = 0;
};
Status run_embedding(const EmbeddingParams& p, DType dtype, KernelStream stream);

// out[t, :] = weight · T(x[t, :] · rsqrt(mean(x[t, :]²) + eps)), fp32 sum of squares;
// out may alias x.
struct RmsNormParams {
  const void* x = nullptr;       // (rows, hidden)
  const void* weight = nullptr;  // (hidden)
  void* out = nullptr;           // (rows, hidden)
  int64_t rows = 0;
  int hidden = 0;
  float eps = 0.f;
};
Status run_rmsnorm(const RmsNormParams& p, DType dtype, KernelStream stream);

// Rotates q and k of each token by its position, writes q to q_out and k, v to
// the cache at (layer, slots[t], kv_head, positions[t]). A token whose slot or
// position is outside the cache gets its q_out but writes nothing to the cache.
struct RopeAppendParams {
  const void* qkv = nullptr;            // (n_tokens, (n_heads + 2*n_kv_heads)*head_dim)
  const int32_t* positions = nullptr;   // (n_tokens)
  const int32_t* slots = nullptr;       // (n_tokens)
  const float* inv_freq = nullptr;      // (rotary_dim/2)
  void* q_out = nullptr;                // (n_tokens, n_heads, head_dim)
  void* k_cache = nullptr;              // (n_slots, n_kv_heads, capacity, head_dim): one layer
  void* v_cache = nullptr;              // (n_slots, n_kv_heads, capacity, head_dim): one layer
  int64_t n_tokens = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;    // even
  int rotary_dim = 0;  // even, <= head_dim; dims past it pass through
  bool interleaved = false;  // pairs (2i, 2i+1) instead of HF rotate-half (i, i + rotary_dim/2)
  int n_slots = 0;
  int capacity = 0;
};
Status run_rope_append_kv(const RopeAppendParams& p, DType dtype, KernelStream stream);

// out[m, f] = T(T(silu(gate[m, f])) · up[m, f]) with gate|up = gate_up[m, :F | F:].
struct SiluMulParams {
  const void* gate_up = nullptr;  // (rows, 2*ffn)
  void* out = nullptr;            // (rows, ffn)
  int64_t rows = 0;
  int64_t ffn = 0;
};
Status run_silu_mul(const SiluMulParams& p, DType dtype, KernelStream stream);

// out[t, :] = T((x[t, :] - mean) · rsqrt(var + eps) · weight + bias), mean and variance
// in fp32 (two passes over the row), the affine map in fp32 and one rounding, as
// torch's LayerNorm kernel does in half precision; out may alias x.
struct LayerNormParams {
  const void* x = nullptr;       // (rows, hidden)
  const void* weight = nullptr;  // (hidden)
  const void* bias = nullptr;    // (hidden)
  void* out = nullptr;           // (rows, hidden)
  int64_t rows = 0;
  int hidden = 0;
  float eps = 0.f;
};
Status run_layernorm(const LayerNormParams& p, DType dtype, KernelStream stream);

// out[t, :] = T(out[t, :] + table[ids[t], :]) (the fp32 sum rounded once); an id outside
// [0, vocab) adds nothing (the engine validates ids on the host).
Status run_embed_add(const EmbeddingParams& p, DType dtype, KernelStream stream);

// out = T(act(x)) elementwise, act in fp32 (relu: x < 0 ? 0 : x; gelu: exact erf form);
// out may alias x.
struct ActivationParams {
  const void* x = nullptr;  // (n)
  void* out = nullptr;      // (n)
  int64_t n = 0;
  Activation kind = Activation::kRelu;
};
Status run_activation(const ActivationParams& p, DType dtype, KernelStream stream);

// y[m, :] = T(y[m, :] + bias): a linear layer's bias when no GEMM epilogue can add it.
struct BiasAddParams {
  void* y = nullptr;           // (rows, cols)
  const void* bias = nullptr;  // (cols)
  int64_t rows = 0;
  int64_t cols = 0;
};
Status run_bias_add(const BiasAddParams& p, DType dtype, KernelStream stream);

// ids[b] = the lowest v with logits[b, v] maximal; NaN never wins; an all-NaN row gives 0.
struct ArgmaxParams {
  const void* logits = nullptr;  // (rows, vocab)
  int32_t* ids = nullptr;        // (rows)
  int64_t rows = 0;
  int64_t vocab = 0;  // <= INT32_MAX
};
Status run_argmax(const ArgmaxParams& p, DType logits_dtype, KernelStream stream);

}  // namespace fdpp::cuda
