#include "model/families/chatglm/family.h"

#include <string>

#include "model/config_readers.h"

namespace fdpp {

using namespace config_json;

// ChatGLM2/3 (THUDM's ChatGLMConfig): RMSNorm, multi-query attention with
// multi_query_group_num KV heads of kv_channels dims, rotary on the first half of
// each head in interleaved pairs, SwiGLU with a fused dense_h_to_4h.
Status parse_chatglm(const json& j, ModelConfig* cfg) {
  // ChatGLM-6B (v1) shares the model_type but is another network (2D positions, GeLU).
  FDPP_ASSIGN_OR_RETURN(const bool pos2d, read_bool_or(j, "position_encoding_2d",
                                                       "position_encoding_2d", false));
  if (pos2d || !find(j, "kv_channels"))
    return Unsupported("this chatglm config is ChatGLM-6B (v1: 2D positions, no kv_channels); "
                       "fdpp supports ChatGLM2/3");
  FDPP_ASSIGN_OR_RETURN(cfg->hidden_size, read_int(j, "hidden_size", "hidden_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->intermediate_size, read_int(j, "ffn_hidden_size", "ffn_hidden_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_layers, read_int(j, "num_layers", "num_layers"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_heads, read_int(j, "num_attention_heads", "num_attention_heads"));
  FDPP_ASSIGN_OR_RETURN(cfg->head_dim, read_int(j, "kv_channels", "kv_channels"));
  {
    const char* key = find(j, "padded_vocab_size") ? "padded_vocab_size" : "vocab_size";
    FDPP_ASSIGN_OR_RETURN(cfg->vocab_size, read_int(j, key, key));
    FDPP_RETURN_IF_ERROR(require_positive(cfg->vocab_size, key));
  }
  FDPP_ASSIGN_OR_RETURN(cfg->max_position_embeddings,
                        read_int_or(j, "seq_length", "seq_length", 2048));
  for (const auto& [v, f] : {std::pair{cfg->hidden_size, "hidden_size"}, {cfg->intermediate_size,
        "ffn_hidden_size"}, {cfg->num_layers, "num_layers"}, {cfg->num_heads,
        "num_attention_heads"}, {cfg->head_dim, "kv_channels"}, {cfg->max_position_embeddings,
        "seq_length"}})
    FDPP_RETURN_IF_ERROR(require_positive(v, f));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_layers, "num_layers", kMaxLayers));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_heads, "num_attention_heads", kMaxHeads));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->head_dim, "kv_channels", kMaxHeadDim));
  FDPP_ASSIGN_OR_RETURN(const bool mqa, read_bool_or(j, "multi_query_attention",
                                                     "multi_query_attention", false));
  cfg->num_kv_heads = cfg->num_heads;
  if (mqa) {
    FDPP_ASSIGN_OR_RETURN(cfg->num_kv_heads, read_int(j, "multi_query_group_num",
                                                      "multi_query_group_num"));
    FDPP_RETURN_IF_ERROR(require_dim(cfg->num_kv_heads, "multi_query_group_num", kMaxHeads));
    if (cfg->num_heads % cfg->num_kv_heads != 0)
      return InvalidArgument("field 'multi_query_group_num' (" +
                             std::to_string(cfg->num_kv_heads) +
                             ") must divide num_attention_heads (" +
                             std::to_string(cfg->num_heads) + ")");
  }
  // RotaryEmbedding(kv_channels // 2) over adjacent pairs: the first half of each head turns.
  if (cfg->head_dim % 4 != 0)
    return InvalidArgument("field 'kv_channels' must be a multiple of 4 (half of it is rotated "
                           "in pairs), got " + std::to_string(cfg->head_dim));
  cfg->rope.partial_rotary_factor = 0.5f;
  cfg->rope.interleaved = true;
  // ChatGLM's base is 10000 · rope_ratio (ChatGLM3-6B-32K: 50; absent in ChatGLM2-6B).
  FDPP_ASSIGN_OR_RETURN(const double ratio, read_number_or(j, "rope_ratio", "rope_ratio", 1.0));
  if (!(ratio > 0)) return InvalidArgument("field 'rope_ratio' must be positive");
  cfg->rope.theta = static_cast<float>(10000.0 * ratio);

  FDPP_ASSIGN_OR_RETURN(const bool rms, read_bool_or(j, "rmsnorm", "rmsnorm", true));
  if (!rms) return Unsupported("field 'rmsnorm': ChatGLM with LayerNorm is not supported");
  FDPP_ASSIGN_OR_RETURN(const bool post_ln_residual,
                        read_bool_or(j, "apply_residual_connection_post_layernorm",
                                     "apply_residual_connection_post_layernorm", false));
  if (post_ln_residual)
    return Unsupported("field 'apply_residual_connection_post_layernorm': true is not supported");
  FDPP_ASSIGN_OR_RETURN(cfg->final_norm, read_bool_or(j, "post_layer_norm", "post_layer_norm",
                                                      true));
  FDPP_ASSIGN_OR_RETURN(double eps, read_number_or(j, "layernorm_epsilon", "layernorm_epsilon",
                                                   1e-5));
  if (!(eps > 0)) return InvalidArgument("field 'layernorm_epsilon' must be positive");
  cfg->norm_eps = static_cast<float>(eps);
  // query_key_value has a bias when either flag says so; dense and the MLP only with
  // add_bias_linear.
  FDPP_ASSIGN_OR_RETURN(const bool linear_bias, read_bool_or(j, "add_bias_linear",
                                                             "add_bias_linear", false));
  FDPP_ASSIGN_OR_RETURN(const bool qkv_bias, read_bool_or(j, "add_qkv_bias", "add_qkv_bias",
                                                          false));
  cfg->attention_bias = linear_bias || qkv_bias;
  cfg->o_bias = cfg->mlp_bias = linear_bias;
  FDPP_ASSIGN_OR_RETURN(cfg->tie_word_embeddings,
                        read_bool_or(j, "tie_word_embeddings", "tie_word_embeddings", false));
  return read_dtype(j, cfg);
}

}  // namespace fdpp
