// Text <-> token ids for the apps: a handle on the model folder's tokenizer (SentencePiece,
// GPT-2 byte-level BPE, ChatGLM2), whichever format it is in.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

class Tokenizer;

// Copies share one tokenizer. One from Engine::tokenizer_handle() is valid while the engine
// lives; one from load() owns its tokenizer.
class TokenizerHandle {
 public:
  // The tokenizer of a Hugging Face model folder, checked against its config.json's vocabulary
  // size. NotFound when the folder has no tokenizer fdpp can read.
  static Result<TokenizerHandle> load(const std::filesystem::path& model_dir);

  // Ids of `text`, with BOS in front when add_bos is set and the tokenizer has one. Text
  // that is not valid UTF-8 is an InvalidArgument.
  Result<std::vector<int>> encode(std::string_view text, bool add_bos) const;
  // encode() with the tokenizer's own BOS rule (tokenizer_config.json's add_bos_token).
  Result<std::vector<int>> encode(std::string_view text) const;
  // The text of a whole id sequence; an id outside the vocabulary becomes "<invalid:ID>".
  std::string decode(std::span<const int> ids) const;
  // The vocabulary entry of one id, for listings: "▁Hello", "<0xF0>", "<s>".
  std::string piece(int id) const;
  // OutOfRange naming the first id outside the vocabulary, else OK.
  Status check_ids(std::span<const int> ids) const;

  int vocab_size() const;
  int bos_id() const;  // -1: none
  int eos_id() const;  // -1: none
  bool add_bos_by_default() const;

  // For library code that needs the internal interface.
  const Tokenizer& internal() const { return *impl_; }
  explicit TokenizerHandle(std::shared_ptr<const Tokenizer> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Tokenizer> impl_;
};

}  // namespace fdpp
