// Stop strings on a text stream: text is released only once it cannot be the
// beginning of a stop string, so a streamed reply never shows a stop string's
// first half and then takes it back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fdpp {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends generated text; returns the text now safe to show. After a stop
  // string is seen, stopped() is true and the text before it has been returned.
  std::string push(std::string_view text);
  // The held-back tail at the end of generation (no stop string was completed).
  std::string flush();
  bool stopped() const { return stopped_; }
  // Everything released so far, i.e. the final text.
  const std::string& text() const { return released_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;   // not yet released: may be the start of a stop string
  std::string released_;
  bool stopped_ = false;
};

}  // namespace fdpp
