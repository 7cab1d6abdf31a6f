#include "tokenizer/stream_decoder.h"

#include <algorithm>

namespace fdpp {

std::string StreamDecoder::push(int id) {
  window_.push_back(id);
  if (tok_->ends_mid_character(window_)) return {};
  std::string text = tok_->decode(window_);
  // No growth: a control token or a space that is still the first piece. Not
  // extending read_text_ would only happen if decoding were not prefix-stable;
  // then keep waiting and let flush() settle it.
  if (text.size() <= read_text_.size() || text.compare(0, read_text_.size(), read_text_) != 0) {
    return {};
  }
  std::string out = text.substr(read_text_.size());
  // The new window starts at the chunk just emitted, which thereby becomes its
  // first piece and takes the leading-space stripping.
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(read_));
  read_ = window_.size();
  read_text_ = tok_->decode(window_);
  return out;
}

std::string StreamDecoder::flush() {
  std::string text = tok_->decode(window_);
  std::string out = text.compare(0, read_text_.size(), read_text_) == 0
                        ? text.substr(read_text_.size())
                        : std::move(text);
  reset();
  return out;
}

void StreamDecoder::reset(std::span<const int> context) {
  window_.clear();
  read_ = 0;
  read_text_.clear();
  if (context.empty()) return;
  // A short tail of the context suffices, as long as it holds a piece with text
  // (which then takes the first-piece space stripping, as in the full sequence);
  // a tail of control tokens only is widened until it does or is all of it.
  size_t k = std::min<size_t>(8, context.size());
  while (k < context.size() && tok_->decode(context.last(k)).empty()) {
    k = std::min(2 * k, context.size());
  }
  auto tail = context.last(k);
  window_.assign(tail.begin(), tail.end());
  read_ = window_.size();
  // Bytes of a character the context leaves incomplete stay unread: the first
  // push that completes it emits the whole character.
  while (read_ > 0 && tok_->ends_mid_character(std::span<const int>(window_).first(read_))) {
    --read_;
  }
  read_text_ = tok_->decode(std::span<const int>(window_).first(read_));
}

}  // namespace fdpp
