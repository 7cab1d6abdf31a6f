#include "model/config_readers.h"

#include <cmath>
#include <limits>

namespace fdpp::config_json {

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

Status require_dim(int value, const char* field, int max) {
  if (value <= 0) {
    return InvalidArgument("field '" + std::string(field) + "' must be positive, got " +
                           std::to_string(value));
  }
  if (value > max) {
    return InvalidArgument("field '" + std::string(field) + "' is " + std::to_string(value) +
                           ", past fdpp's limit of " + std::to_string(max));
  }
  return Status::Ok();
}

Status require_positive(int value, const char* field) { return require_dim(value, field, kMaxDim); }

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

}  // namespace fdpp::config_json
