// StreamDecoder: text of a generation as it grows, one token at a time.
//
// Invariant: the concatenation of every push() result and the final flush()
// equals tokenizer.decode(ids) of all pushed ids (for a decoder primed with a
// context: decode(context + ids) less the text of the context), and each push()
// result is complete UTF-8. Byte-fallback tokens that split a character are held
// back until the character is complete.
//
// Cost per token is O(window), not O(sequence): the decoder re-decodes only the
// ids since the start of the previously emitted chunk and emits the difference
// (the detokenizer scheme of vLLM / Hugging Face TextStreamer). The window
// keeps the already-emitted piece at its front on purpose: SentencePiece drops
// the leading space of a sequence's first piece, and that piece must be one
// whose text was already counted, never a new one.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fdpp {

class StreamDecoder {
 public:
  // `tok` must outlive the decoder.
  explicit StreamDecoder(const Tokenizer& tok) : tok_(&tok) {}
  // Primed with the ids that precede the streamed ones (usually the prompt), so
  // the first streamed piece keeps its leading space and a character whose first
  // bytes are in the context is emitted whole once completed.
  StreamDecoder(const Tokenizer& tok, std::span<const int> context) : tok_(&tok) {
    reset(context);
  }

  // Newly completed text; empty while a character is incomplete or the id adds
  // no text (BOS/EOS).
  std::string push(int id);
  // Everything still held back (an incomplete character becomes U+FFFD, as in
  // decode()); the decoder then starts over as if newly constructed.
  std::string flush();
  // Starts a new sequence, optionally primed with a context.
  void reset(std::span<const int> context = {});

 private:
  const Tokenizer* tok_;
  std::vector<int> window_;  // ids from the start of the last emitted chunk on
  size_t read_ = 0;          // window_[0, read_) has been emitted...
  std::string read_text_;    // ...and decodes, as a window, to this
};

}  // namespace fdpp
