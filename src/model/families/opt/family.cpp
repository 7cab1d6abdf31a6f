#include "model/families/opt/family.h"

#include "model/families/opt/opt_model.h"
#include "model/families/registry.h"

namespace fdpp {

std::unique_ptr<Model> make_opt_model(const ModelConfig& cfg, Backend& backend,
                                      const ModelLimits& limits) {
  return std::make_unique<OptModel>(cfg, backend, limits);
}

// OptModel runs its LayerNorms and activation as kernels of their own: no prologue.
std::vector<GemmShape> opt_gemm_shapes(const ModelConfig& c) {
  return linear_gemm_shapes(c, LinearPrologue::Kind::kNone, LinearPrologue::Kind::kNone);
}

// GPT-2 byte-level BPE: OPT prepends its BOS (</s>) to every prompt; GPT-2 adds none.
TokenizerHints opt_tokenizer_hints(const ModelConfig& cfg) {
  TokenizerHints h = config_tokenizer_hints(cfg);
  h.bpe_add_bos = true;
  return h;
}

}  // namespace fdpp
