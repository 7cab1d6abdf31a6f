#include "model/families/llama/family.h"

#include "model/families/llama/llama_model.h"
#include "model/families/registry.h"

namespace fdpp {

std::unique_ptr<Model> make_llama_model(const ModelConfig& cfg, Backend& backend,
                                        const ModelLimits& limits) {
  return std::make_unique<LlamaModel>(cfg, backend, limits);
}

// LlamaModel applies the norms before qkv, gate_up and the LM head, and the SiLU gate
// before down, through Backend::fused_linear.
std::vector<GemmShape> llama_gemm_shapes(const ModelConfig& c) {
  return linear_gemm_shapes(c, LinearPrologue::Kind::kRmsNorm, LinearPrologue::Kind::kSiluMul);
}

// SentencePiece (LlamaTokenizer: BOS added by default); a GPT-2 BPE folder adds none.
TokenizerHints llama_tokenizer_hints(const ModelConfig& cfg) { return config_tokenizer_hints(cfg); }

}  // namespace fdpp
