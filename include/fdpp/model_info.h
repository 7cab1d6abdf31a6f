// What a model folder holds and what running it costs (fdpp info), read without loading the
// weights; ModelSummary is also what a loaded Engine reports about its model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

// The architecture as config.json describes it, after fdpp's defaults are applied.
struct ModelSummary {
  std::string architecture;  // "llama", "opt", "chatglm"
  std::string model_type;    // config.json's
  int layers = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;
  bool learned_positions = false;  // an OPT-style position table; otherwise rotary
  int rotary_dim = 0;              // 0 with learned positions
  bool rope_interleaved = false;   // pairs (2i, 2i+1) instead of rotate-half
  std::string rope_type;           // "default", "linear", "llama3"
  float rope_theta = 0;
  bool norm_before = true;          // pre-norm blocks
  std::string norm;                 // "RMSNorm" or "LayerNorm"
  bool gated_mlp = true;            // gate|up → act·mul → down; false: up → act → down
  std::string hidden_act;           // "silu", "relu", "gelu"
  bool attention_bias = false;      // q, k, v
  bool o_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
};

// One linear-layer shape y[M,N] = x[M,K] · W[N,K]ᵀ and how many weights of it a forward
// multiplies by.
struct GemmShapeInfo {
  std::string name;  // "qkv", "o", "gate_up" | "fc1", "down" | "fc2", "lm_head", ...
  int64_t n = 0;
  int64_t k = 0;
  int count = 0;
};

struct ModelInfo {
  ModelSummary model;
  int64_t parameters = 0;  // a tied LM head counted once
  size_t checkpoint_tensors = 0;
  size_t checkpoint_bytes = 0;
  std::map<std::string, int> checkpoint_dtypes;  // safetensors dtype -> tensors of it
  size_t weight_bytes_fp16 = 0;  // as fdpp stores the weights in fp16 / bf16
  size_t weight_bytes_fp32 = 0;
  double kv_cache_bytes_per_token_fp16 = 0;  // K and V of every layer
  std::vector<GemmShapeInfo> gemm_shapes;
};

// Reads config.json and the safetensors headers of `model_dir`.
Result<ModelInfo> read_model_info(const std::filesystem::path& model_dir);

}  // namespace fdpp
