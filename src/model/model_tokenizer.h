// A model folder's tokenizer as its family reads it: the hints (which tokenizer, the BOS
// default, the config's ids and vocabulary) come from the config's family, so the
// tokenizer library itself knows nothing of model configs.
#pragma once

#include <filesystem>
#include <memory>

#include "fdpp/status.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

// The hints of cfg's family (cfg.arch; model/families/registry.h).
TokenizerHints tokenizer_hints(const ModelConfig& cfg);

// load_tokenizer(model_dir, tokenizer_hints(cfg)).
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::filesystem::path& model_dir,
                                                  const ModelConfig& cfg);

}  // namespace fdpp
