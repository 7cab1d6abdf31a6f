// SentencePiece tokenizer (Llama 1/2, CodeLlama, Mistral-style tokenizer.model),
// through libsentencepiece. Encoding and decoding are exactly SentencePiece's
// (what transformers' slow LlamaTokenizer with legacy=true produces); this
// class adds the checks (UTF-8 input, ids in range) and streaming support.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace fdpp {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  struct Options {
    bool add_bos = true;
    bool add_eos = false;
    // BOS / EOS: the piece named here if the vocabulary has it (tokenizer_config.json's
    // bos_token / eos_token), else the model's own <s> / </s>, else the fallback id
    // (config.json's), else none.
    std::string bos_piece;
    std::string eos_piece;
    int fallback_bos_id = -1;
    int fallback_eos_id = -1;
  };

  // Corrupt when the bytes are not a SentencePiece model.
  static Result<std::unique_ptr<SentencePieceTokenizer>> from_serialized(
      std::string_view model_proto, const Options& opts);
  // NotFound / IoError for the file, Corrupt for its contents; messages name the path.
  static Result<std::unique_ptr<SentencePieceTokenizer>> load(const std::filesystem::path& file,
                                                              const Options& opts);
  ~SentencePieceTokenizer() override;

  Result<std::vector<int>> encode(std::string_view text, bool add_bos) const override;
  std::string decode(std::span<const int> ids) const override;
  int vocab_size() const override { return vocab_size_; }
  std::string token_text(int id) const override;
  bool ends_mid_character(std::span<const int> ids) const override;

  // The model's own piece id, or -1 when `piece` is not in the vocabulary.
  int piece_to_id(std::string_view piece) const;

 private:
  SentencePieceTokenizer();
  // Decodes ids that are all valid; `first` says whether they start the text
  // (SentencePiece drops the leading space of the first piece only).
  std::string decode_valid(std::span<const int> ids, bool first) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int vocab_size_ = 0;
  std::vector<int16_t> byte_of_;  // (vocab_size) byte of a byte-fallback piece, else -1
  // Decoding [anchor] + ids and removing anchor_text_ decodes ids as a
  // continuation: the anchor (<unk>) takes the first-piece space stripping and,
  // not being a byte piece, ends any byte run just as an invalid id does.
  int anchor_id_ = -1;
  std::string anchor_text_;
};

}  // namespace fdpp
