// Model weights on a backend: one allocation for all of them, laid out by a
// plan computed from the config alone (so its size is known, and checked
// against free memory, before any byte is read), then filled from safetensors
// with the Hugging Face tensor names bound, shape-checked, converted to the
// backend's dtype and fused (q|k|v into one QKV matrix, gate|up into one).
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

// Pure: the layout of every weight of `cfg` stored as `dtype`.
WeightPlan plan_weights(const ModelConfig& cfg, DType dtype);

struct LayerWeights {
  Tensor attn_norm;  // (hidden)
  Tensor qkv;        // ((n_heads + 2*n_kv_heads)*head_dim, hidden): rows q | k | v
  Tensor o;          // (hidden, n_heads*head_dim)
  Tensor ffn_norm;   // (hidden)
  Tensor gate_up;    // (2*intermediate, hidden): rows gate | up
  Tensor down;       // (hidden, intermediate)
};

struct ModelWeights {
  WeightPlan plan;
  Buffer storage;  // the one allocation every Tensor below points into
  Tensor embed;    // (vocab, hidden)
  Tensor final_norm;  // (hidden)
  Tensor lm_head;  // (vocab, hidden); the embedding itself when tied
  std::vector<LayerWeights> layers;
};

// Loads every weight `plan_weights(cfg, backend.activation_dtype())` names.
// Errors name the Hugging Face tensor: missing, wrong shape, unsupported dtype.
Result<ModelWeights> load_weights(const ModelConfig& cfg, const SafetensorsModel& st, Backend& backend);

}  // namespace fdpp
