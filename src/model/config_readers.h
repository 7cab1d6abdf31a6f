// The JSON field readers every family's config parser uses: each checks the type before it
// reads (nlohmann's get<T>() throws on a mismatch) and turns a mismatch, a missing required
// field or an out-of-range value into an InvalidArgument naming the field. A JSON null counts
// as absent, as transformers treats it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "fdpp/status.h"
#include "model/config.h"

namespace fdpp::config_json {

using json = nlohmann::json;

const json* find(const json& obj, const char* key);  // nullptr when absent or null
std::string type_of(const json& v);

Result<int> read_int(const json& obj, const char* key, const std::string& field);
Result<int> read_int_or(const json& obj, const char* key, const std::string& field, int def);
Result<double> read_number(const json& obj, const char* key, const std::string& field);
Result<double> read_number_or(const json& obj, const char* key, const std::string& field,
                              double def);
Result<bool> read_bool_or(const json& obj, const char* key, const std::string& field, bool def);
Result<std::string> read_string_or(const json& obj, const char* key, const std::string& field,
                                   const std::string& def);

// Upper bounds on the sizes config.json may give. Far above every published model (126
// layers, 128 heads of 256, hidden 16384, vocabulary 256k, 10M positions) and small enough
// that every size fdpp derives from them (qkv_dim, a weight's element count, a layer's
// bytes) is exact in int64 and the per-tensor widths in int: a config past them is a typo
// or an attack, and refusing it here is what keeps later arithmetic free of overflow.
inline constexpr int kMaxLayers = 1024;
inline constexpr int kMaxHeads = 4096;    // attention heads and KV heads
inline constexpr int kMaxHeadDim = 4096;
inline constexpr int kMaxDim = 1 << 24;   // hidden, intermediate, vocabulary, positions
static_assert(int64_t{3} * kMaxHeads * kMaxHeadDim <= std::numeric_limits<int>::max(),
              "qkv_dim must fit in int");

// value in [1, max], or an InvalidArgument naming the field and the bound.
Status require_dim(int value, const char* field, int max);
Status require_positive(int value, const char* field);  // require_dim(value, field, kMaxDim)

// `text` parsed as a JSON object; `what` names the file in the error.
Result<json> parse_json_object(const std::string& text, const char* what);

// RoPE in both spellings (transformers 4's rope_theta + rope_scaling, transformers 5's
// rope_parameters) into cfg->rope.
Status read_rope(const json& j, ModelConfig* cfg);
// torch_dtype (or transformers 5's dtype) into cfg->torch_dtype.
Status read_dtype(const json& j, ModelConfig* cfg);

}  // namespace fdpp::config_json
