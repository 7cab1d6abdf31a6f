// The ChatGLM family (model_type "chatglm"): THUDM ChatGLM2/3. The network is Llama's
// (families/llama/llama_model.h runs it); what is its own is the config, the tensor names
// and the tokenizer.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "fdpp/status.h"
#include "model/config.h"
#include "model/weight_specs.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

Status parse_chatglm(const nlohmann::json& j, ModelConfig* cfg);
std::vector<WeightSpec> chatglm_weight_specs(const ModelConfig& c);
TokenizerHints chatglm_tokenizer_hints(const ModelConfig& cfg);

}  // namespace fdpp
