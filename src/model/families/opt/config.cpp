#include "model/families/opt/family.h"

#include <string>

#include "model/config_readers.h"

namespace fdpp {

using namespace config_json;

// OPT (transformers OPTConfig): LayerNorm, learned positions, biases everywhere,
// a plain ReLU MLP, tied LM head. Defaults are OPTConfig's.
Status parse_opt(const json& j, ModelConfig* cfg) {
  FDPP_ASSIGN_OR_RETURN(cfg->hidden_size, read_int(j, "hidden_size", "hidden_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->intermediate_size, read_int(j, "ffn_dim", "ffn_dim"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_layers, read_int(j, "num_hidden_layers", "num_hidden_layers"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_heads, read_int(j, "num_attention_heads", "num_attention_heads"));
  FDPP_ASSIGN_OR_RETURN(cfg->vocab_size, read_int(j, "vocab_size", "vocab_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->max_position_embeddings,
                        read_int_or(j, "max_position_embeddings", "max_position_embeddings",
                                    2048));
  for (const auto& [v, f] : {std::pair{cfg->hidden_size, "hidden_size"}, {cfg->intermediate_size,
        "ffn_dim"}, {cfg->num_layers, "num_hidden_layers"}, {cfg->num_heads,
        "num_attention_heads"}, {cfg->vocab_size, "vocab_size"}, {cfg->max_position_embeddings,
        "max_position_embeddings"}})
    FDPP_RETURN_IF_ERROR(require_positive(v, f));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_layers, "num_hidden_layers", kMaxLayers));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_heads, "num_attention_heads", kMaxHeads));
  if (cfg->hidden_size % cfg->num_heads != 0)
    return InvalidArgument("field 'hidden_size' (" + std::to_string(cfg->hidden_size) +
                           ") is not a multiple of num_attention_heads (" +
                           std::to_string(cfg->num_heads) + ")");
  cfg->num_kv_heads = cfg->num_heads;
  cfg->head_dim = cfg->hidden_size / cfg->num_heads;
  FDPP_RETURN_IF_ERROR(require_dim(cfg->head_dim, "hidden_size / num_attention_heads",
                                   kMaxHeadDim));
  cfg->position = PositionKind::kLearned;
  cfg->norm = NormKind::kLayer;
  cfg->norm_eps = 1e-5f;  // nn.LayerNorm's default; OPTConfig has no field for it
  cfg->gated_mlp = false;

  FDPP_ASSIGN_OR_RETURN(cfg->norm_before, read_bool_or(j, "do_layer_norm_before",
                                                       "do_layer_norm_before", true));
  FDPP_ASSIGN_OR_RETURN(const bool remove_final, read_bool_or(j, "_remove_final_layer_norm",
                                                              "_remove_final_layer_norm", false));
  // OPTDecoder builds final_layer_norm only for pre-norm models.
  cfg->final_norm = cfg->norm_before && !remove_final;
  FDPP_ASSIGN_OR_RETURN(const bool affine, read_bool_or(j, "layer_norm_elementwise_affine",
                                                        "layer_norm_elementwise_affine", true));
  if (!affine)
    return Unsupported("field 'layer_norm_elementwise_affine': LayerNorm without weight and bias "
                       "is not supported");
  FDPP_ASSIGN_OR_RETURN(const bool bias, read_bool_or(j, "enable_bias", "enable_bias", true));
  cfg->attention_bias = cfg->o_bias = cfg->mlp_bias = bias;
  FDPP_ASSIGN_OR_RETURN(cfg->embed_dim, read_int_or(j, "word_embed_proj_dim",
                                                    "word_embed_proj_dim", cfg->hidden_size));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->embed_dim, "word_embed_proj_dim"));
  // The embedding's output reuses a (tokens, hidden) activation buffer.
  if (cfg->embed_dim > cfg->hidden_size)
    return Unsupported("field 'word_embed_proj_dim' (" + std::to_string(cfg->embed_dim) +
                       ") larger than hidden_size (" + std::to_string(cfg->hidden_size) +
                       ") is not supported");
  FDPP_ASSIGN_OR_RETURN(std::string act, read_string_or(j, "activation_function",
                                                        "activation_function", "relu"));
  if (act != "relu" && act != "gelu")
    return Unsupported("field 'activation_function': activation '" + act +
                       "' is not supported for opt (relu, gelu)");
  cfg->hidden_act = act;
  // PretrainedConfig's default, and every OPT checkpoint's: the LM head is the embedding.
  FDPP_ASSIGN_OR_RETURN(cfg->tie_word_embeddings,
                        read_bool_or(j, "tie_word_embeddings", "tie_word_embeddings", true));
  return read_dtype(j, cfg);
}

}  // namespace fdpp
