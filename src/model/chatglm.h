// The ChatGLM2/3 forward (THUDM chatglm2-6b, chatglm3-6b): pre-RMSNorm blocks,
// multi-query attention (multi_query_group_num KV heads) with a bias on the fused
// query_key_value, rotary on the first half of each head in interleaved pairs,
// SwiGLU MLP with a fused dense_h_to_4h, untied output layer.
#pragma once

#include "model/model.h"

namespace fdpp {

class ChatGlmModel final : public Model {
 public:
  ChatGlmModel(const ModelConfig& cfg, Backend& backend, const ModelLimits& limits)
      : Model(cfg, backend, limits) {}
  Status forward(const ForwardPass& pass) override;
};

}  // namespace fdpp
