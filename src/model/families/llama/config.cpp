#include "model/families/llama/family.h"

#include <string>

#include "model/config_readers.h"

namespace fdpp {

using namespace config_json;

// Hugging Face LlamaConfig (Llama 2/3, TinyLlama, stories*).
Status parse_llama(const json& j, ModelConfig* cfg) {
  FDPP_ASSIGN_OR_RETURN(cfg->hidden_size, read_int(j, "hidden_size", "hidden_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->intermediate_size,
                        read_int(j, "intermediate_size", "intermediate_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_layers, read_int(j, "num_hidden_layers", "num_hidden_layers"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_heads, read_int(j, "num_attention_heads", "num_attention_heads"));
  FDPP_ASSIGN_OR_RETURN(cfg->vocab_size, read_int(j, "vocab_size", "vocab_size"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->hidden_size, "hidden_size"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->intermediate_size, "intermediate_size"));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_layers, "num_hidden_layers", kMaxLayers));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_heads, "num_attention_heads", kMaxHeads));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->vocab_size, "vocab_size"));

  FDPP_ASSIGN_OR_RETURN(cfg->num_kv_heads, read_int_or(j, "num_key_value_heads",
                                                       "num_key_value_heads", cfg->num_heads));
  FDPP_RETURN_IF_ERROR(require_dim(cfg->num_kv_heads, "num_key_value_heads", kMaxHeads));
  if (cfg->num_heads % cfg->num_kv_heads != 0) {
    return InvalidArgument("field 'num_key_value_heads' (" + std::to_string(cfg->num_kv_heads) +
                           ") must divide num_attention_heads (" +
                           std::to_string(cfg->num_heads) + ")");
  }

  if (find(j, "head_dim")) {
    FDPP_ASSIGN_OR_RETURN(cfg->head_dim, read_int(j, "head_dim", "head_dim"));
    FDPP_RETURN_IF_ERROR(require_dim(cfg->head_dim, "head_dim", kMaxHeadDim));
  } else {
    if (cfg->hidden_size % cfg->num_heads != 0) {
      return InvalidArgument("field 'hidden_size' (" + std::to_string(cfg->hidden_size) +
                             ") is not a multiple of num_attention_heads (" +
                             std::to_string(cfg->num_heads) + ") and no head_dim is given");
    }
    cfg->head_dim = cfg->hidden_size / cfg->num_heads;
    FDPP_RETURN_IF_ERROR(require_dim(cfg->head_dim, "hidden_size / num_attention_heads",
                                     kMaxHeadDim));
  }
  // RoPE rotates pairs of dimensions.
  if (cfg->head_dim % 2 != 0) {
    return InvalidArgument("field 'head_dim' must be even, got " + std::to_string(cfg->head_dim));
  }

  FDPP_ASSIGN_OR_RETURN(double eps, read_number_or(j, "rms_norm_eps", "rms_norm_eps", 1e-6));
  if (!(eps > 0)) {
    return InvalidArgument("field 'rms_norm_eps' must be positive, got " + std::to_string(eps));
  }
  cfg->norm_eps = static_cast<float>(eps);
  FDPP_ASSIGN_OR_RETURN(cfg->max_position_embeddings,
                        read_int_or(j, "max_position_embeddings", "max_position_embeddings",
                                    2048));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->max_position_embeddings, "max_position_embeddings"));
  FDPP_ASSIGN_OR_RETURN(cfg->tie_word_embeddings,
                        read_bool_or(j, "tie_word_embeddings", "tie_word_embeddings", false));
  FDPP_ASSIGN_OR_RETURN(cfg->attention_bias,
                        read_bool_or(j, "attention_bias", "attention_bias", false));
  cfg->o_bias = cfg->attention_bias;  // transformers' Llama: q, k, v and o alike
  FDPP_ASSIGN_OR_RETURN(cfg->mlp_bias, read_bool_or(j, "mlp_bias", "mlp_bias", false));

  FDPP_ASSIGN_OR_RETURN(std::string act, read_string_or(j, "hidden_act", "hidden_act", "silu"));
  // transformers maps "swish" to the same SiLU module.
  if (act != "silu" && act != "swish") {
    return Unsupported("field 'hidden_act': activation '" + act +
                       "' is not supported for llama (only silu)");
  }
  cfg->hidden_act = "silu";

  FDPP_RETURN_IF_ERROR(read_rope(j, cfg));
  const int rd = cfg->rotary_dim();
  if (rd <= 0 || rd % 2 != 0 || rd > cfg->head_dim) {
    return InvalidArgument("rotary dimension head_dim * partial_rotary_factor = " +
                           std::to_string(rd) + " must be even and in (0, head_dim = " +
                           std::to_string(cfg->head_dim) + "]");
  }
  return read_dtype(j, cfg);
}

}  // namespace fdpp
