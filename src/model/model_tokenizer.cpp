#include "model/model_tokenizer.h"

#include "model/families/registry.h"

namespace fdpp {

TokenizerHints tokenizer_hints(const ModelConfig& cfg) {
  return model_family(cfg.arch).tokenizer_hints(cfg);
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::filesystem::path& model_dir,
                                                  const ModelConfig& cfg) {
  return load_tokenizer(model_dir, tokenizer_hints(cfg));
}

}  // namespace fdpp
