// What each architecture stores and where it comes from: one list of fdpp weights
// per model, each with its shape and the checkpoint tensors that fill it, row
// block after row block (that is how q|k|v and gate|up are fused). The loader
// (weights.cpp) is the same for every architecture; only these lists differ, one per
// family (model/families/<name>/weights.cpp).
//
// fdpp weight names: "embed", "pos_embed", "project_in", "project_out",
// "final_norm", "final_norm_bias", "lm_head" and "layers.<i>.<field>" with the
// fields of LayerWeights (weights.h). A weight a model does not have (a bias of a
// bias-free projection, a tied LM head) is simply not listed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace fdpp {

// One checkpoint tensor, or its rows from skip_rows on, filling the next rows of
// an fdpp weight.
struct WeightSource {
  std::vector<std::string> names;  // spellings in order of preference; the first present is read
  Shape shape;                     // its full shape in the checkpoint, from config.json
  int64_t skip_rows = 0;           // leading rows not loaded (OPT's position offset of 2)
};

struct WeightSpec {
  std::string name;  // fdpp's name, e.g. "layers.3.qkv"
  Shape shape;       // the loaded weight: the sources' rows stacked
  std::vector<WeightSource> sources;
};

// Every weight of `cfg`'s architecture in load order (the layout order of the plan): its
// family's list (model/families/<name>/weights.cpp).
std::vector<WeightSpec> weight_specs(const ModelConfig& cfg);

// How the families write their lists.
class SpecList {
 public:
  // A weight filled by several tensors, their rows stacked in order.
  void add(std::string name, Shape shape, std::vector<WeightSource> sources) {
    out.push_back({std::move(name), shape, std::move(sources)});
  }
  // A weight that is one checkpoint tensor of the same shape (any of `names`).
  void one(std::string name, std::vector<std::string> names, Shape shape) {
    add(std::move(name), shape, {{std::move(names), shape}});
  }
  std::vector<WeightSpec> out;
};

}  // namespace fdpp
