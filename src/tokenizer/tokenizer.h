// Tokenizer: text <-> token ids, whatever the model's tokenizer format.
// Implementations: SentencePiece (Llama), ChatGLM2 (SentencePiece plus its special
// tokens and prompt prefix), GPT-2 byte-level BPE (GPT-2, OPT). Streaming text out
// of a generation goes through StreamDecoder.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`, with bos_id() in front when add_bos is set and the
  // tokenizer has a BOS token (ChatGLM: its prefix [gMASK] sop, of which bos_id()
  // is the first). Text that is not valid UTF-8 is an InvalidArgument.
  virtual Result<std::vector<int>> encode(std::string_view text, bool add_bos) const = 0;

  // The text of a whole id sequence (the first piece's leading space is dropped,
  // as SentencePiece does; control tokens such as BOS/EOS give no text). Never
  // fails: an id outside [0, vocab_size()) becomes invalid_id_text(id), so a
  // stray id from a model whose embedding is padded past the tokenizer's
  // vocabulary shows up in the text instead of aborting a generation. Callers
  // that must refuse such ids check them first with check_ids().
  virtual std::string decode(std::span<const int> ids) const = 0;

  virtual int vocab_size() const = 0;

  int bos_id() const { return bos_id_; }  // -1: none
  int eos_id() const { return eos_id_; }  // -1: none
  // From tokenizer_config.json's add_bos_token / add_eos_token (Llama: true / false).
  bool add_bos_by_default() const { return add_bos_; }
  bool add_eos_by_default() const { return add_eos_; }

  // The vocabulary entry for listings (`fdpp tokenize`): "▁Hello", "<0xF0>", "<s>";
  // invalid_id_text(id) for an id out of range.
  virtual std::string token_text(int id) const { return decode(std::span<const int>(&id, 1)); }

  // True when decode(ids) ends in a character that later ids could still complete
  // (its first bytes came from byte-level tokens); the text so far then ends in
  // U+FFFD placeholders that must not be streamed yet. Looks only at the tail.
  virtual bool ends_mid_character(std::span<const int> ids) const { return false; }

  bool is_valid_id(int id) const { return id >= 0 && id < vocab_size(); }
  // OutOfRange naming the first id outside the vocabulary, else OK.
  Status check_ids(std::span<const int> ids) const {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!is_valid_id(ids[i])) {
        return OutOfRange("token id " + std::to_string(ids[i]) + " at position " +
                          std::to_string(i) + " is outside the tokenizer's vocabulary [0, " +
                          std::to_string(vocab_size()) + ")");
      }
    }
    return Status::Ok();
  }

  // What decode() writes for an id outside the vocabulary: "<invalid:32005>".
  static std::string invalid_id_text(int id) { return "<invalid:" + std::to_string(id) + ">"; }

 protected:
  int bos_id_ = -1;
  int eos_id_ = -1;
  bool add_bos_ = false;
  bool add_eos_ = false;
};

// What the model's family tells load_tokenizer (model/families/<name>/family.cpp builds it from
// the config): which tokenizer reads a tokenizer.model, the defaults where
// tokenizer_config.json is silent, and the config's ids and vocabulary size. The defaults
// here are the Llama family's.
struct TokenizerHints {
  // Which tokenizer a tokenizer.model file is: plain SentencePiece, or ChatGLM2's (its
  // special tokens and prompt prefix on top).
  enum class SentencePiece { kPlain, kChatGlm };
  SentencePiece sentencepiece = SentencePiece::kPlain;
  bool sentencepiece_add_bos = true;  // LlamaTokenizer adds BOS; add_bos_token overrides
  bool bpe_add_bos = false;           // GPT-2 adds none (OPT: its </s>); add_bos_token overrides
  int fallback_bos_id = -1;  // the config's BOS / EOS, for files that name no piece (-1: none)
  int fallback_eos_id = -1;
  int vocab_size = 0;        // the model's; 0 skips the check
};

// The tokenizer of a Hugging Face model folder: tokenizer.model (SentencePiece; the
// ChatGLM2 tokenizer when the hints say so) or vocab.json + merges.txt (GPT-2 byte-level
// BPE), plus tokenizer_config.json and special_tokens_map.json when present (add_bos_token,
// add_eos_token, bos_token, eos_token, the special tokens). NotFound when the folder has no
// tokenizer fdpp can read (the CLI then works on token ids: --prompt-ids); Corrupt for
// unreadable tokenizer files; InvalidArgument when the vocabulary exceeds hints.vocab_size
// (ids the model cannot embed). The overload taking a ModelConfig (model/model_tokenizer.h)
// asks the config's family for the hints.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::filesystem::path& model_dir,
                                                  const TokenizerHints& hints);

}  // namespace fdpp
