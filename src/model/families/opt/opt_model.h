// The OPT forward (facebook/opt-125m ... 66b): learned positions, LayerNorm before
// (or, OPT-350m, after) each block, biases on every projection, a ReLU MLP, tied LM
// head, project_in / project_out when word_embed_proj_dim differs from hidden_size.
#pragma once

#include "model/model.h"

namespace fdpp {

class OptModel final : public Model {
 public:
  OptModel(const ModelConfig& cfg, Backend& backend, const ModelLimits& limits)
      : Model(cfg, backend, limits) {}
  Status forward(const ForwardPass& pass) override;
};

}  // namespace fdpp
