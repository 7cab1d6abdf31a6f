#include "model/families/registry.h"

#include <array>
#include <string_view>

#include "model/families/chatglm/family.h"
#include "model/families/llama/family.h"
#include "model/families/opt/family.h"

namespace fdpp {
namespace {

// One line per family. ChatGLM2's network is Llama's: its forward and GEMM shapes are the
// llama family's.
const std::array<ModelFamily, 3> kFamilies = {{
    {"llama", Architecture::kLlama, parse_llama, llama_weight_specs, make_llama_model,
     llama_gemm_shapes, llama_tokenizer_hints},
    {"opt", Architecture::kOpt, parse_opt, opt_weight_specs, make_opt_model, opt_gemm_shapes,
     opt_tokenizer_hints},
    {"chatglm", Architecture::kChatGlm, parse_chatglm, chatglm_weight_specs, make_llama_model,
     llama_gemm_shapes, chatglm_tokenizer_hints},
}};

}  // namespace

std::span<const ModelFamily> model_families() { return kFamilies; }

const ModelFamily* find_model_family(std::string_view model_type) {
  for (const ModelFamily& f : kFamilies)
    if (model_type == f.model_type) return &f;
  return nullptr;
}

const ModelFamily& model_family(Architecture arch) {
  for (const ModelFamily& f : kFamilies)
    if (f.arch == arch) return f;
  return kFamilies.front();  // unreachable: every Architecture has a line above
}

TokenizerHints config_tokenizer_hints(const ModelConfig& cfg) {
  TokenizerHints h;
  h.fallback_bos_id = cfg.bos_token_id;
  h.fallback_eos_id = cfg.eos_token_ids.empty() ? -1 : cfg.eos_token_ids.front();
  h.vocab_size = cfg.vocab_size;
  return h;
}

}  // namespace fdpp
