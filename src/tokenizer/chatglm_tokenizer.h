// The ChatGLM2/3 tokenizer (THUDM tokenization_chatglm.py): SentencePiece for text, plus
// five special tokens numbered right after the SentencePiece vocabulary,
//   [MASK] n, [gMASK] n+1, [sMASK] n+2, sop n+3, eop n+4   (ChatGLM2-6B: n = 64789),
// and the prompt prefix [gMASK] sop in front of encoded text (its
// build_inputs_with_special_tokens), which plays the role of a BOS here: encode(text,
// add_bos = true) prepends it. The special tokens are never produced from text (its
// SentencePiece encodes "[gMASK]" literally) and decode to nothing, as its
// convert_id_to_token maps them to "".
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tokenizer/sentencepiece_tokenizer.h"

namespace fdpp {

class ChatGlmTokenizer final : public Tokenizer {
 public:
  static constexpr int kNumSpecial = 5;
  static constexpr const char* kSpecialNames[kNumSpecial] = {"[MASK]", "[gMASK]", "[sMASK]",
                                                             "sop", "eop"};

  static Result<std::unique_ptr<ChatGlmTokenizer>> load(const std::filesystem::path& model_file);
  static Result<std::unique_ptr<ChatGlmTokenizer>> from_serialized(std::string_view model_proto);

  Result<std::vector<int>> encode(std::string_view text, bool add_bos) const override;
  std::string decode(std::span<const int> ids) const override;
  int vocab_size() const override { return sp_->vocab_size() + kNumSpecial; }
  std::string token_text(int id) const override;
  bool ends_mid_character(std::span<const int> ids) const override;

  // The id of "[gMASK]", "sop", ...; -1 for another name.
  int special_id(std::string_view name) const;
  std::vector<int> prefix() const { return {special_id("[gMASK]"), special_id("sop")}; }

 private:
  explicit ChatGlmTokenizer(std::unique_ptr<SentencePieceTokenizer> sp);
  static Result<std::unique_ptr<ChatGlmTokenizer>> wrap(
      Result<std::unique_ptr<SentencePieceTokenizer>> sp);
  // ids without the special tokens (invalid ids stay, so decode still shows them).
  std::vector<int> without_specials(std::span<const int> ids) const;

  std::unique_ptr<SentencePieceTokenizer> sp_;
};

}  // namespace fdpp
