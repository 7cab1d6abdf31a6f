#include "model/config.h"

#include <cmath>
#include <limits>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace fdpp {

namespace {

using json = nlohmann::json;

// Field readers. nlohmann's get<T>() throws on a type mismatch, so every read
// checks the type first and turns a mismatch into an InvalidArgument naming the
// field; a JSON null counts as absent, as transformers treats it.

const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string type_of(const json& v) { return v.type_name(); }

Result<int> read_int(const json& obj, const char* key, const std::string& field) {
  const json* v = find(obj, key);
  if (!v) return InvalidArgument("missing required field '" + field + "'");
  if (!v->is_number_integer()) {
    return InvalidArgument("field '" + field + "' must be an integer, got " + type_of(*v) + " " +
                           v->dump());
  }
  // Integers beyond int's range are not a size any model has; refuse rather than wrap.
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      return InvalidArgument("field '" + field + "' is out of range: " + v->dump());
    }
  } else {
    const int64_t x = v->get<int64_t>();
    if (x > std::numeric_limits<int>::max() || x < std::numeric_limits<int>::min()) {
      return InvalidArgument("field '" + field + "' is out of range: " + v->dump());
    }
  }
  return static_cast<int>(v->get<int64_t>());
}

Result<int> read_int_or(const json& obj, const char* key, const std::string& field, int def) {
  if (!find(obj, key)) return def;
  return read_int(obj, key, field);
}

Result<double> read_number_or(const json& obj, const char* key, const std::string& field,
                              double def) {
  const json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_number()) {
    return InvalidArgument("field '" + field + "' must be a number, got " + type_of(*v) + " " +
                           v->dump());
  }
  const double x = v->get<double>();
  if (!std::isfinite(x)) return InvalidArgument("field '" + field + "' is not finite");
  return x;
}

Result<double> read_number(const json& obj, const char* key, const std::string& field) {
  if (!find(obj, key)) return InvalidArgument("missing required field '" + field + "'");
  return read_number_or(obj, key, field, 0.0);
}

Result<bool> read_bool_or(const json& obj, const char* key, const std::string& field, bool def) {
  const json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_boolean()) {
    return InvalidArgument("field '" + field + "' must be true or false, got " + type_of(*v) +
                           " " + v->dump());
  }
  return v->get<bool>();
}

Result<std::string> read_string_or(const json& obj, const char* key, const std::string& field,
                                   const std::string& def) {
  const json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_string()) {
    return InvalidArgument("field '" + field + "' must be a string, got " + type_of(*v) + " " +
                           v->dump());
  }
  return v->get<std::string>();
}

Status require_positive(int value, const char* field) {
  if (value <= 0) {
    return InvalidArgument("field '" + std::string(field) + "' must be positive, got " +
                           std::to_string(value));
  }
  return Status::Ok();
}

Result<json> parse_json_object(const std::string& text, const char* what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // e.what() carries the byte offset and the offending token.
    return InvalidArgument(std::string(what) + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) {
    return InvalidArgument(std::string(what) + " must be a JSON object, got " + type_of(j));
  }
  return j;
}

// Token ids in config.json / generation_config.json: an int, a list of ints, or null.
Status read_token_ids(const json& obj, const char* key, const std::string& field,
                      std::vector<int>* out, bool* present) {
  *present = false;
  const json* v = find(obj, key);
  if (!v) return Status::Ok();
  std::vector<int> ids;
  auto take = [&](const json& x) -> Status {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
        x.get<int64_t>() > std::numeric_limits<int>::max()) {
      return InvalidArgument("field '" + field + "' must be a non-negative token id or a list of "
                             "them, got " + v->dump());
    }
    ids.push_back(static_cast<int>(x.get<int64_t>()));
    return Status::Ok();
  };
  if (v->is_array()) {
    for (const json& x : *v) FDPP_RETURN_IF_ERROR(take(x));
  } else {
    FDPP_RETURN_IF_ERROR(take(*v));
  }
  *out = std::move(ids);
  *present = true;
  return Status::Ok();
}

Status read_special_tokens(const json& j, const std::string& file, ModelConfig* cfg) {
  std::vector<int> ids;
  bool present = false;
  FDPP_RETURN_IF_ERROR(read_token_ids(j, "bos_token_id", file + "bos_token_id", &ids, &present));
  if (present) {
    if (ids.size() != 1) {
      return InvalidArgument("field '" + file + "bos_token_id' must be a single token id");
    }
    cfg->bos_token_id = ids[0];
  }
  FDPP_RETURN_IF_ERROR(read_token_ids(j, "eos_token_id", file + "eos_token_id", &ids, &present));
  if (present) cfg->eos_token_ids = ids;
  return Status::Ok();
}

// RoPE in both spellings: transformers 4 writes a top-level rope_theta plus an
// optional rope_scaling dict ("type" or "rope_type"); transformers 5 folds all of
// it into rope_parameters. Both must produce the same RopeConfig.
Status read_rope(const json& j, ModelConfig* cfg) {
  RopeConfig& rope = cfg->rope;
  FDPP_ASSIGN_OR_RETURN(double theta, read_number_or(j, "rope_theta", "rope_theta", 10000.0));
  FDPP_ASSIGN_OR_RETURN(double partial, read_number_or(j, "partial_rotary_factor",
                                                       "partial_rotary_factor", 1.0));

  const json* params = nullptr;
  std::string where;
  if (const json* p = find(j, "rope_parameters")) {
    params = p;
    where = "rope_parameters";
  } else if (const json* s = find(j, "rope_scaling")) {
    params = s;
    where = "rope_scaling";
  }
  std::string type = "default";
  if (params) {
    if (!params->is_object()) {
      return InvalidArgument("field '" + where + "' must be an object or null, got " +
                             type_of(*params));
    }
    const char* type_key = find(*params, "rope_type") ? "rope_type" : "type";
    FDPP_ASSIGN_OR_RETURN(type, read_string_or(*params, type_key, where + "." + type_key,
                                               "default"));
    FDPP_ASSIGN_OR_RETURN(theta, read_number_or(*params, "rope_theta", where + ".rope_theta",
                                                theta));
    FDPP_ASSIGN_OR_RETURN(partial, read_number_or(*params, "partial_rotary_factor",
                                                  where + ".partial_rotary_factor", partial));
  }
  if (!(theta > 0)) {
    return InvalidArgument("field 'rope_theta' must be positive, got " + std::to_string(theta));
  }
  if (!(partial > 0 && partial <= 1)) {
    return InvalidArgument("field 'partial_rotary_factor' must be in (0, 1], got " +
                           std::to_string(partial));
  }
  rope.theta = static_cast<float>(theta);
  rope.partial_rotary_factor = static_cast<float>(partial);
  rope.type = type;

  if (type == "default") return Status::Ok();
  if (type != "linear" && type != "llama3") {
    return Unsupported("RoPE type '" + type + "' (" + where +
                       ") is not supported; fdpp implements default, linear and llama3");
  }
  FDPP_ASSIGN_OR_RETURN(double factor, read_number(*params, "factor", where + ".factor"));
  if (!(factor > 0)) {
    return InvalidArgument("field '" + where + ".factor' must be positive, got " +
                           std::to_string(factor));
  }
  rope.factor = static_cast<float>(factor);
  if (type == "linear") return Status::Ok();

  FDPP_ASSIGN_OR_RETURN(double low, read_number(*params, "low_freq_factor",
                                                where + ".low_freq_factor"));
  FDPP_ASSIGN_OR_RETURN(double high, read_number(*params, "high_freq_factor",
                                                 where + ".high_freq_factor"));
  FDPP_ASSIGN_OR_RETURN(int orig, read_int(*params, "original_max_position_embeddings",
                                           where + ".original_max_position_embeddings"));
  // The smooth interpolation divides by (high - low) and by the factors themselves.
  if (!(low > 0) || !(high > low)) {
    return InvalidArgument("fields '" + where + ".low_freq_factor' and '" + where +
                           ".high_freq_factor' need 0 < low < high, got " + std::to_string(low) +
                           " and " + std::to_string(high));
  }
  FDPP_RETURN_IF_ERROR(require_positive(orig, "original_max_position_embeddings"));
  rope.low_freq_factor = static_cast<float>(low);
  rope.high_freq_factor = static_cast<float>(high);
  rope.original_max_position_embeddings = orig;
  return Status::Ok();
}

Status read_dtype(const json& j, ModelConfig* cfg) {
  // transformers 5 renamed torch_dtype to dtype; the newer spelling wins.
  const char* key = find(j, "dtype") ? "dtype" : "torch_dtype";
  FDPP_ASSIGN_OR_RETURN(std::string s, read_string_or(j, key, key, ""));
  if (s.empty()) {
    cfg->torch_dtype.reset();
    return Status::Ok();
  }
  if (s == "float16") {
    cfg->torch_dtype = DType::kF16;
  } else if (s == "bfloat16") {
    cfg->torch_dtype = DType::kBF16;
  } else if (s == "float32") {
    cfg->torch_dtype = DType::kF32;
  } else {
    return Unsupported("field '" + std::string(key) + "': dtype '" + s +
                       "' is not supported (float16, bfloat16, float32)");
  }
  return Status::Ok();
}

Status parse_llama(const json& j, ModelConfig* cfg) {
  FDPP_ASSIGN_OR_RETURN(cfg->hidden_size, read_int(j, "hidden_size", "hidden_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->intermediate_size,
                        read_int(j, "intermediate_size", "intermediate_size"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_layers, read_int(j, "num_hidden_layers", "num_hidden_layers"));
  FDPP_ASSIGN_OR_RETURN(cfg->num_heads, read_int(j, "num_attention_heads", "num_attention_heads"));
  FDPP_ASSIGN_OR_RETURN(cfg->vocab_size, read_int(j, "vocab_size", "vocab_size"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->hidden_size, "hidden_size"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->intermediate_size, "intermediate_size"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->num_layers, "num_hidden_layers"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->num_heads, "num_attention_heads"));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->vocab_size, "vocab_size"));

  FDPP_ASSIGN_OR_RETURN(cfg->num_kv_heads, read_int_or(j, "num_key_value_heads",
                                                       "num_key_value_heads", cfg->num_heads));
  FDPP_RETURN_IF_ERROR(require_positive(cfg->num_kv_heads, "num_key_value_heads"));
  if (cfg->num_heads % cfg->num_kv_heads != 0) {
    return InvalidArgument("field 'num_key_value_heads' (" + std::to_string(cfg->num_kv_heads) +
                           ") must divide num_attention_heads (" +
                           std::to_string(cfg->num_heads) + ")");
  }

  if (find(j, "head_dim")) {
    FDPP_ASSIGN_OR_RETURN(cfg->head_dim, read_int(j, "head_dim", "head_dim"));
    FDPP_RETURN_IF_ERROR(require_positive(cfg->head_dim, "head_dim"));
  } else {
    if (cfg->hidden_size % cfg->num_heads != 0) {
      return InvalidArgument("field 'hidden_size' (" + std::to_string(cfg->hidden_size) +
                             ") is not a multiple of num_attention_heads (" +
                             std::to_string(cfg->num_heads) + ") and no head_dim is given");
    }
    cfg->head_dim = cfg->hidden_size / cfg->num_heads;
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
  if (cfg->hidden_size % cfg->num_heads != 0)
    return InvalidArgument("field 'hidden_size' (" + std::to_string(cfg->hidden_size) +
                           ") is not a multiple of num_attention_heads (" +
                           std::to_string(cfg->num_heads) + ")");
  cfg->num_kv_heads = cfg->num_heads;
  cfg->head_dim = cfg->hidden_size / cfg->num_heads;
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
  FDPP_ASSIGN_OR_RETURN(const bool mqa, read_bool_or(j, "multi_query_attention",
                                                     "multi_query_attention", false));
  cfg->num_kv_heads = cfg->num_heads;
  if (mqa) {
    FDPP_ASSIGN_OR_RETURN(cfg->num_kv_heads, read_int(j, "multi_query_group_num",
                                                      "multi_query_group_num"));
    FDPP_RETURN_IF_ERROR(require_positive(cfg->num_kv_heads, "multi_query_group_num"));
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

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return "llama";
    case Architecture::kOpt: return "opt";
    case Architecture::kChatGlm: return "chatglm";
  }
  return "?";
}

Result<ModelConfig> parse_model_config(const std::string& config_json,
                                       const std::string* generation_config_json) {
  FDPP_ASSIGN_OR_RETURN(json j, parse_json_object(config_json, "config.json"));
  ModelConfig cfg;
  {
    const json* mt = find(j, "model_type");
    if (!mt) return InvalidArgument("missing required field 'model_type'");
    if (!mt->is_string()) {
      return InvalidArgument("field 'model_type' must be a string, got " + type_of(*mt));
    }
    cfg.model_type = mt->get<std::string>();
  }
  if (cfg.model_type == "llama") {
    cfg.arch = Architecture::kLlama;
    FDPP_RETURN_IF_ERROR(parse_llama(j, &cfg));
  } else if (cfg.model_type == "opt") {
    cfg.arch = Architecture::kOpt;
    FDPP_RETURN_IF_ERROR(parse_opt(j, &cfg));
  } else if (cfg.model_type == "chatglm") {
    cfg.arch = Architecture::kChatGlm;
    FDPP_RETURN_IF_ERROR(parse_chatglm(j, &cfg));
  } else {
    return Unsupported("model_type '" + cfg.model_type +
                       "' is not supported (fdpp supports: llama, opt, chatglm)");
  }

  FDPP_RETURN_IF_ERROR(read_special_tokens(j, "", &cfg));
  if (generation_config_json) {
    FDPP_ASSIGN_OR_RETURN(json g,
                          parse_json_object(*generation_config_json, "generation_config.json"));
    FDPP_RETURN_IF_ERROR(read_special_tokens(g, "generation_config.json:", &cfg));
  }
  // An id past the vocabulary would index beyond the embedding and the LM head.
  if (cfg.bos_token_id >= cfg.vocab_size) {
    return InvalidArgument("field 'bos_token_id' (" + std::to_string(cfg.bos_token_id) +
                           ") is not below vocab_size (" + std::to_string(cfg.vocab_size) + ")");
  }
  for (int id : cfg.eos_token_ids) {
    if (id >= cfg.vocab_size) {
      return InvalidArgument("field 'eos_token_id' (" + std::to_string(id) +
                             ") is not below vocab_size (" + std::to_string(cfg.vocab_size) + ")");
    }
  }
  return cfg;
}

Result<ModelConfig> load_model_config(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  auto config = read_text_file(config_path);
  if (!config.ok()) return config.status();

  const auto gen_path = dir / "generation_config.json";
  std::error_code ec;
  std::optional<std::string> gen;
  if (std::filesystem::exists(gen_path, ec)) {
    auto g = read_text_file(gen_path);
    if (!g.ok()) return g.status();
    gen = std::move(g).value();
  }
  auto cfg = parse_model_config(config.value(), gen ? &*gen : nullptr);
  if (!cfg.ok()) return cfg.status().with_context(dir.string());
  return cfg;
}

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
  const RopeConfig& r = cfg.rope;
  const int dim = cfg.rotary_dim();
  std::vector<float> out(dim > 0 ? dim / 2 : 0);
  const double kPi = 3.14159265358979323846;
  for (int i = 0; i < static_cast<int>(out.size()); ++i) {
    double f = 1.0 / std::pow(static_cast<double>(r.theta), 2.0 * i / dim);
    if (r.type == "linear") {
      f /= r.factor;
    } else if (r.type == "llama3") {
      // transformers _compute_llama3_parameters: frequencies whose wavelength is
      // shorter than the original context / high_freq_factor are kept, longer than
      // context / low_freq_factor are divided by factor, and the band between is
      // a linear blend in (context / wavelength).
      const double ctx = r.original_max_position_embeddings;
      const double low_wavelen = ctx / r.low_freq_factor;
      const double high_wavelen = ctx / r.high_freq_factor;
      const double wavelen = 2.0 * kPi / f;
      if (wavelen > low_wavelen) {
        f /= r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1.0 - smooth) * f / r.factor + smooth * f;
      }
    }
    out[i] = static_cast<float>(f);
  }
  return out;
}

}  // namespace fdpp
