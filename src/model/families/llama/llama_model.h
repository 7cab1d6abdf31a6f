// The pre-RMSNorm + SwiGLU forward: Llama (Llama 2/3, TinyLlama, stories*: rotary attention
// with grouped KV heads, optional tied LM head) and ChatGLM2/3 (THUDM chatglm2-6b,
// chatglm3-6b). ChatGLM2 is the same network; what differs is data, not code: multi-query
// attention (multi_query_group_num KV heads), a bias on the fused query_key_value, rotary on
// the first half of each head in interleaved pairs (ModelConfig::rope), an optional final
// norm (post_layer_norm), and its tensor names (chatglm/weights.cpp).
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
