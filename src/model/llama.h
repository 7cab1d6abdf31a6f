// The Llama forward (Llama 2/3, TinyLlama, stories*): pre-RMSNorm blocks,
// rotary attention with grouped KV heads, SwiGLU MLP, optional tied LM head.
#pragma once

#include "model/model.h"

namespace fdpp {

class LlamaModel final : public Model {
 public:
  LlamaModel(const ModelConfig& cfg, Backend& backend, const ModelLimits& limits)
      : Model(cfg, backend, limits) {}
  Status forward(const ForwardPass& pass) override;
};

}  // namespace fdpp
