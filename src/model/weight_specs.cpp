#include "model/weight_specs.h"

#include "model/families/registry.h"

namespace fdpp {

std::vector<WeightSpec> weight_specs(const ModelConfig& cfg) {
  return model_family(cfg.arch).weight_specs(cfg);
}

}  // namespace fdpp
