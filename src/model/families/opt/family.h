// The OPT family (model_type "opt"): facebook/opt-* checkpoints (OPTForCausalLM).
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "fdpp/status.h"
#include "model/config.h"
#include "model/gemm_shapes.h"
#include "model/model.h"
#include "model/weight_specs.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

Status parse_opt(const nlohmann::json& j, ModelConfig* cfg);
std::vector<WeightSpec> opt_weight_specs(const ModelConfig& c);
std::unique_ptr<Model> make_opt_model(const ModelConfig& cfg, Backend& backend,
                                      const ModelLimits& limits);
std::vector<GemmShape> opt_gemm_shapes(const ModelConfig& c);
TokenizerHints opt_tokenizer_hints(const ModelConfig& cfg);

}  // namespace fdpp
