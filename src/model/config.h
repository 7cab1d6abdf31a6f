// ModelConfig: what fdpp needs from a Hugging Face model folder's config.json
// (and generation_config.json), normalised across architectures and across
// transformers versions (e.g. rope_theta vs transformers-5 rope_parameters).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp {

enum class Architecture { kLlama, kOpt, kChatGlm };
const char* architecture_name(Architecture a);

enum class NormKind { kRms, kLayer };  // RMSNorm (weight) or LayerNorm (weight + bias)
// Where a token's position enters: rotated into q and k (RoPE), or a learned
// table added to the embedding (OPT; rotary_dim() is then 0).
enum class PositionKind { kRotary, kLearned };

struct RopeConfig {
  std::string type = "default";  // "default", "linear", "dynamic" is refused, "llama3"
  float theta = 10000.0f;
  float factor = 1.0f;                        // linear / llama3 scaling factor
  float low_freq_factor = 1.0f;               // llama3
  float high_freq_factor = 4.0f;              // llama3
  int original_max_position_embeddings = 0;   // llama3
  float partial_rotary_factor = 1.0f;         // fraction of head_dim that is rotated
  bool interleaved = false;                   // pairs (2i, 2i+1) instead of rotate-half
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string model_type;  // as written in config.json

  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // defaults to num_heads
  int head_dim = 0;      // defaults to hidden_size / num_heads
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float norm_eps = 1e-6f;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v carry a bias (Llama attention_bias, OPT, ChatGLM2)
  bool o_bias = false;          // the attention output projection carries one
  bool mlp_bias = false;        // the MLP's projections carry one
  std::string hidden_act = "silu";  // "silu" (gated: silu(gate) * up), "relu" / "gelu" (OPT)
  bool gated_mlp = true;        // gate|up → silu·mul → down; false: up → act → down (OPT)

  NormKind norm = NormKind::kRms;
  bool norm_before = true;  // pre-norm blocks; false: norm after each residual add (OPT-350m)
  bool final_norm = true;   // a norm between the last block and the LM head
  PositionKind position = PositionKind::kRotary;
  // OPT's word_embed_proj_dim: the width of the token embedding and the LM head's input
  // when project_in / project_out map it to and from hidden_size; 0: hidden_size.
  int embed_dim = 0;
  std::optional<DType> torch_dtype;  // the checkpoint's declared dtype, if any

  int bos_token_id = -1;             // -1: none
  std::vector<int> eos_token_ids;    // generation_config.json wins over config.json

  int rotary_dim() const {
    if (position != PositionKind::kRotary) return 0;
    // In double: head_dim converted to float rounds up past int's range near 2^31, and the
    // parser bounds partial_rotary_factor to (0, 1], so the product never exceeds head_dim.
    return static_cast<int>(static_cast<double>(head_dim) * rope.partial_rotary_factor);
  }
  // The width of the token embedding table and of the LM head's rows.
  int token_dim() const { return embed_dim > 0 ? embed_dim : hidden_size; }
  bool has_projections() const { return token_dim() != hidden_size; }  // OPT project_in / out
  // Formed in int64; the parser's limits (config_readers.h kMaxHeads, kMaxHeadDim) keep the
  // result inside int.
  int qkv_dim() const {
    return static_cast<int>((int64_t{num_heads} + 2 * int64_t{num_kv_heads}) * head_dim);
  }
};

// Parses config.json text (and optional generation_config.json text). Every
// required field missing or out of range is an InvalidArgument naming it.
Result<ModelConfig> parse_model_config(const std::string& config_json,
                                       const std::string* generation_config_json = nullptr);

// Reads <dir>/config.json and, if present, <dir>/generation_config.json.
Result<ModelConfig> load_model_config(const std::filesystem::path& dir);

// The rotation frequency of each dimension pair (rotary_dim/2 values), with the
// configured scaling applied: the one table both backends' RoPE reads.
std::vector<float> rope_inv_freq(const ModelConfig& cfg);

}  // namespace fdpp
