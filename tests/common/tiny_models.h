// Tiny random OPT and ChatGLM2 model folders (config.json + model.safetensors, in the
// checkpoints' own tensor names) written by the tests, and their forward written out
// independently in double precision from transformers' / THUDM's definitions: the
// reference the CPU backend's end-to-end logits are checked against.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fdpp::test {

struct TinyOpt {
  int hidden = 48;
  int ffn = 80;
  int layers = 2;
  int heads = 4;
  int vocab = 97;
  int max_pos = 64;
  bool pre_norm = true;      // do_layer_norm_before; false: OPT-350m's post-norm blocks
  int proj_dim = 0;          // word_embed_proj_dim; 0: hidden (no project_in / project_out)
  bool tied = true;
  std::string act = "relu";  // activation_function
  bool decoder_prefix = false;  // "decoder." names (facebook's files) instead of "model.decoder."
  std::string dtype = "F32";    // safetensors dtype of the weights: F32, F16 or BF16
  uint64_t seed = 1;
};

struct TinyGlm {
  int hidden = 64;
  int ffn = 72;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;      // multi_query_group_num
  int kv_channels = 16;  // head_dim
  int vocab = 101;       // padded_vocab_size
  int seq_length = 128;
  bool qkv_bias = true;       // add_qkv_bias
  bool linear_bias = false;   // add_bias_linear
  bool post_layer_norm = true;
  double rope_ratio = 1.0;    // written only when != 1
  std::string dtype = "F32";
  uint64_t seed = 2;
};

// The values of every tensor written (already rounded to the file's dtype), by name.
using TensorMap = std::map<std::string, std::vector<float>>;

// Writes config.json, generation_config.json and model.safetensors into `dir`.
TensorMap write_tiny_opt(const std::filesystem::path& dir, const TinyOpt& m);
TensorMap write_tiny_chatglm(const std::filesystem::path& dir, const TinyGlm& m);

// Logits (ids.size(), vocab), row t for token t at position t, in double precision.
std::vector<double> opt_reference_logits(const TinyOpt& m, const TensorMap& w,
                                         const std::vector<int>& ids);
std::vector<double> chatglm_reference_logits(const TinyGlm& m, const TensorMap& w,
                                             const std::vector<int>& ids);

}  // namespace fdpp::test
