// GPT-2's pre-tokenizer: splits text into the pieces BPE merges within, by the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (OpenAI's encoder.py; transformers' GPT2Tokenizer and the ByteLevel pre-tokenizer of
// `tokenizers`), matched with PCRE2 in UTF + Unicode-property mode. Text between two
// matches, if any, is a piece of its own (tokenizers' "isolated" split behaviour).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

class Gpt2PreTokenizer {
 public:
  // Compiles the pattern (JIT when PCRE2 has it). Internal if PCRE2 refuses it.
  static Result<Gpt2PreTokenizer> create();
  Gpt2PreTokenizer(Gpt2PreTokenizer&&) noexcept;
  Gpt2PreTokenizer& operator=(Gpt2PreTokenizer&&) noexcept;
  ~Gpt2PreTokenizer();

  // The pieces of `text` (valid UTF-8, checked by the caller) in order; their
  // concatenation is `text`. Safe to call from several threads at once.
  Result<std::vector<std::string_view>> split(std::string_view text) const;

 private:
  struct Code;
  explicit Gpt2PreTokenizer(std::unique_ptr<Code> code);
  std::unique_ptr<Code> code_;
};

}  // namespace fdpp
