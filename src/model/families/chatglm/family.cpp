#include "model/families/chatglm/family.h"

#include "model/families/registry.h"

namespace fdpp {

// Its tokenizer.model is read by ChatGlmTokenizer: SentencePiece plus the special tokens
// and the [gMASK] sop prompt prefix.
TokenizerHints chatglm_tokenizer_hints(const ModelConfig& cfg) {
  TokenizerHints h = config_tokenizer_hints(cfg);
  h.sentencepiece = TokenizerHints::SentencePiece::kChatGlm;
  return h;
}

}  // namespace fdpp
