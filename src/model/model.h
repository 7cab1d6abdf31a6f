// Model: the forward pass of one architecture, written once against the
// Backend op contract, plus the buffers it runs in. Everything is allocated at
// creation (weights, KV cache, activations for `max_tokens` rows), so a step
// allocates nothing and can be captured into a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "model/config.h"
#include "model/model_softmax.h"
#include "model/weights.h"

namespace fdpp {

struct ModelLimits {
  int context = 0;     // KV-cache positions per sequence
  int max_batch = 1;   // KV-cache slots = sequences decoded together
  int max_tokens = 0;  // rows of one forward: max(prefill chunk, max_batch)
};

// One forward call: a prefill chunk of one sequence, or one decode token for each
// of `n_tokens` sequences. Inputs are read from the device copies of
// Model::inputs(n) (see upload_inputs), so a captured decode graph stays valid.
struct ForwardPass {
  enum class Kind { kPrefill, kDecode };
  Kind kind = Kind::kDecode;
  int n_tokens = 0;
  // Prefill: every token belongs to `slot` and sits at positions start_pos + t.
  int slot = 0;
  int start_pos = 0;
  bool all_logits = false;  // prefill: logits of every token instead of only the last
  // Decode: upper bound of the sequences' lengths (the graph's KV-split grid).
  int max_length = 0;
};

// Host-side inputs of a forward of n tokens (pinned on devices): one entry per token (ids,
// positions, slots) or per sequence (lengths, at most n), and the argmax ids of the last
// step. Model::inputs(n) packs the four arrays back to back for that n, so that the upload
// is one copy: a graph replays its copy nodes one after the other, and each costs the copy
// engine's latency.
struct StepInputs {
  int32_t* ids = nullptr;        // (n)
  int32_t* positions = nullptr;  // (n)
  int32_t* slots = nullptr;      // (n)
  int32_t* lengths = nullptr;    // (n): decode, one per sequence
  int32_t* next_ids = nullptr;   // (max_tokens): argmax of each logits row, after download
};

// Bytes of activations, KV cache and weights a model needs: checked against the
// device's free memory before anything is allocated.
struct MemoryPlan {
  size_t weight_bytes = 0;
  size_t kv_cache_bytes = 0;
  size_t activation_bytes = 0;
  size_t total() const;  // saturates at SIZE_MAX
};
MemoryPlan plan_memory(const ModelConfig& cfg, DType dtype, const ModelLimits& limits);

class Model {
 public:
  virtual ~Model() = default;

  // Loads weights and allocates the KV cache and activations.
  static Result<std::unique_ptr<Model>> create(const ModelConfig& cfg, const SafetensorsModel& st,
                                               Backend& backend, const ModelLimits& limits);

  const ModelConfig& config() const { return cfg_; }
  const ModelLimits& limits() const { return limits_; }
  const ModelWeights& weights() const { return weights_; }
  Backend& backend() { return backend_; }

  // The host inputs of a forward of n_tokens (<= limits().max_tokens) tokens: fill them, then
  // upload_inputs(n_tokens, ...). The pointers depend on n_tokens (the arrays are packed).
  StepInputs inputs(int n_tokens) const;
  const KVCache& kv_cache() const { return cache_; }
  // One stream-ordered copy host -> device of the inputs(n_tokens) arrays: n_tokens ids,
  // positions and slots, and n_seqs (<= n_tokens) lengths.
  Status upload_inputs(int n_tokens, int n_seqs);
  virtual Status forward(const ForwardPass& pass) = 0;
  // One prefill forward of tokens `ids` (at most limits().max_tokens) of the sequence in
  // `slot`, at positions start_pos, start_pos + 1, ...: fills inputs(n_tokens), uploads, forward().
  Status prefill_chunk(const int* ids, int n_tokens, int slot, int start_pos,
                       bool all_logits = false);
  // (rows, vocab) logits of the last forward: all tokens, the last one (prefill), or one per sequence.
  Tensor logits(int rows) const { return logits_.rows(0, rows); }
  // Stream-ordered copy of the argmax ids of the first `rows` logits rows into inputs(n).next_ids.
  Status download_next_ids(int rows);
  // The attention softmax: mode, φ, fallback counters, calibration statistics (Technique 1).
  ModelSoftmax& softmax() { return softmax_; }

 protected:
  Model(const ModelConfig& cfg, Backend& backend, const ModelLimits& limits)
      : cfg_(cfg), backend_(backend), limits_(limits) {}
  Status allocate_buffers();

  // Forward steps every architecture shares (forward_common.cpp).
  // The pass fits the limits: token count, batch, and (prefill) the positions.
  Status check_pass(const ForwardPass& pass) const;
  // RoPE of the fused qkv rows (when the model rotates) and their k, v appended to the
  // layer's cache, then q attends to the cache: prefill (causal, one slot) or decode
  // (one token per sequence). q: (T, n_heads, head_dim) scratch; out likewise.
  Status rope_append_attend(const ForwardPass& pass, int layer, const Tensor& qkv, const Tensor& q,
                            const Tensor& out);

  ModelConfig cfg_;
  Backend& backend_;
  ModelLimits limits_;
  ModelWeights weights_;
  KVCache cache_;
  ModelSoftmax softmax_;

  // The device copies of inputs(n): ids, positions, slots (n) and lengths (n_seqs) of a
  // forward of n tokens, packed as the host's are.
  Tensor ids(int n) const { return packed_input(0, n); }
  Tensor positions(int n) const { return packed_input(n, n); }
  Tensor slots(int n) const { return packed_input(2 * n, n); }
  Tensor lengths(int n) const { return packed_input(3 * n, n); }
  Tensor packed_input(int64_t offset, int64_t n) const;

  Buffer host_inputs_;    // pinned: the packed inputs (3·max_tokens + max_batch), next_ids
  Buffer device_inputs_;  // the same layout, then inv_freq
  int32_t* host_next_ids_ = nullptr;
  Tensor next_ids_;   // i32 (max_tokens)
  Tensor inv_freq_;   // f32 (rotary_dim/2)

  Buffer activations_;
  Tensor x_;        // (max_tokens, hidden): the residual stream
  Tensor h_;        // (max_tokens, hidden): normed input of a block
  Tensor qkv_;      // (max_tokens, (n_heads + 2*n_kv_heads)*head_dim)
  Tensor q_;        // (max_tokens, n_heads, head_dim): rotated queries
  Tensor attn_;     // (max_tokens, n_heads, head_dim)
  Tensor gate_up_;  // (max_tokens, 2*intermediate)
  Tensor act_;      // (max_tokens, intermediate)
  Tensor logits_;   // (max_tokens, vocab)
};

}  // namespace fdpp
