// The model families fdpp runs, by config.json's model_type. A family is one folder under
// src/model/families/ (its config parser, tensor names, forward, GEMM prologues and
// tokenizer hints) plus its line in registry.cpp; everything else (the weight loader, the
// KV cache, the engine, the backends) is shared and asks the registry.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "fdpp/status.h"
#include "model/config.h"
#include "model/gemm_shapes.h"
#include "model/model.h"
#include "model/weight_specs.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

struct ModelFamily {
  const char* model_type;  // config.json's spelling
  Architecture arch;
  // config.json's architecture fields into cfg (model_type and arch are set; BOS/EOS and the
  // vocabulary checks are shared and run after it).
  Status (*parse)(const nlohmann::json& config, ModelConfig* cfg);
  // Every weight in load order, with the checkpoint tensors that fill it.
  std::vector<WeightSpec> (*weight_specs)(const ModelConfig& cfg);
  // The forward (its buffers are allocated by Model::create).
  std::unique_ptr<Model> (*make_model)(const ModelConfig& cfg, Backend& backend,
                                       const ModelLimits& limits);
  // The distinct linear-layer shapes and the prologue the forward fuses into each.
  std::vector<GemmShape> (*gemm_shapes)(const ModelConfig& cfg);
  // Which tokenizer reads the folder's files and its defaults where they are silent.
  TokenizerHints (*tokenizer_hints)(const ModelConfig& cfg);
};

// Every family, in the order the "not supported" message lists them.
std::span<const ModelFamily> model_families();
// nullptr for a model_type fdpp does not run.
const ModelFamily* find_model_family(std::string_view model_type);
// The family of a parsed config (every Architecture has one).
const ModelFamily& model_family(Architecture arch);

// What every family's hints start from: the config's BOS / EOS as fallback ids and its
// vocabulary size as the tokenizer's bound.
TokenizerHints config_tokenizer_hints(const ModelConfig& cfg);

}  // namespace fdpp
