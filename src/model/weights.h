// Model weights on a backend: one allocation for all of them, laid out by a
// plan computed from the config alone (so its size is known, and checked
// against free memory, before any byte is read), then filled from safetensors
// with the checkpoint's tensor names bound, shape-checked, converted to the
// backend's dtype and fused (q|k|v into one QKV matrix, gate|up into one). Which
// tensors make which weight is each architecture's list in model/weight_specs.h.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace fdpp {

// Where one fused weight lives inside the single weights allocation.
struct WeightSlot {
  std::string name;  // fdpp's name, e.g. "layers.3.qkv"
  Shape shape;
  size_t offset = 0;  // bytes from the start of the allocation (256-byte aligned)
};

struct WeightPlan {
  DType dtype = DType::kF32;
  std::vector<WeightSlot> slots;
  size_t total_bytes = 0;
  int64_t num_params = 0;  // counted once (a tied LM head is not a second copy)
};

// Pure: the layout of every weight of `cfg` (model/weight_specs.h) stored as `dtype`.
WeightPlan plan_weights(const ModelConfig& cfg, DType dtype);

// plan_weights(cfg, dtype)'s total_bytes and num_params without building the plan: the
// weights outside the blocks plus num_layers times one block's (every block has the same
// shapes), so sizing a config costs the same for 1024 layers as for 1 and a config is
// refused by arithmetic, not by allocating the list of what it describes.
struct WeightTotals {
  size_t bytes = 0;
  int64_t params = 0;
};
WeightTotals weight_totals(const ModelConfig& cfg, DType dtype);

// A weight the architecture does not have is an empty Tensor (data == nullptr): biases
// are passed to ops as they are, and an empty one means "no bias".
struct LayerWeights {
  Tensor attn_norm;       // (hidden)
  Tensor attn_norm_bias;  // (hidden): LayerNorm models
  Tensor qkv;             // ((n_heads + 2*n_kv_heads)*head_dim, hidden): rows q | k | v
  Tensor qkv_bias;        // ((n_heads + 2*n_kv_heads)*head_dim)
  Tensor o;               // (hidden, n_heads*head_dim)
  Tensor o_bias;          // (hidden)
  Tensor ffn_norm;        // (hidden)
  Tensor ffn_norm_bias;   // (hidden): LayerNorm models
  Tensor gate_up;         // (2*intermediate, hidden): rows gate | up (gated MLP)
  Tensor gate_up_bias;    // (2*intermediate)
  Tensor up;              // (intermediate, hidden): plain MLP (OPT fc1)
  Tensor up_bias;         // (intermediate)
  Tensor down;            // (hidden, intermediate)
  Tensor down_bias;       // (hidden)
};

struct ModelWeights {
  WeightPlan plan;
  Buffer storage;        // the one allocation every Tensor below points into
  Tensor embed;          // (vocab, token_dim)
  Tensor pos_embed;      // (max_positions, hidden): learned positions, row p = position p
  Tensor project_in;     // (hidden, token_dim): OPT with word_embed_proj_dim != hidden
  Tensor project_out;    // (token_dim, hidden)
  Tensor final_norm;     // (hidden)
  Tensor final_norm_bias;  // (hidden): LayerNorm models
  Tensor lm_head;        // (vocab, token_dim); the embedding itself when tied
  std::vector<LayerWeights> layers;
};

// Loads every weight `plan_weights(cfg, backend.activation_dtype())` names.
// Errors name the Hugging Face tensor: missing, wrong shape, unsupported dtype.
Result<ModelWeights> load_weights(const ModelConfig& cfg, const SafetensorsModel& st, Backend& backend);

}  // namespace fdpp
