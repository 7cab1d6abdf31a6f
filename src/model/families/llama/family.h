// The Llama family (model_type "llama"): Hugging Face LlamaForCausalLM checkpoints. Its
// forward (LlamaModel) also runs ChatGLM2/3, which reuses make_llama_model and
// llama_gemm_shapes (families/chatglm/).
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

Status parse_llama(const nlohmann::json& j, ModelConfig* cfg);
std::vector<WeightSpec> llama_weight_specs(const ModelConfig& c);
std::unique_ptr<Model> make_llama_model(const ModelConfig& cfg, Backend& backend,
                                        const ModelLimits& limits);
std::vector<GemmShape> llama_gemm_shapes(const ModelConfig& c);
TokenizerHints llama_tokenizer_hints(const ModelConfig& cfg);

}  // namespace fdpp
