#include "tokenizer/utf8.h"

#include <cstdint>

namespace fdpp {

namespace {

// Sequence length announced by a lead byte; 0 for a continuation byte or a byte
// that never starts a valid sequence (C0, C1: overlong; F5..FF: beyond U+10FFFF).
int sequence_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// The second byte's range depends on the lead: it is where overlong forms,
// surrogates and code points past U+10FFFF are excluded.
bool valid_second(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Whether s[pos..] starts with bytes that fit a sequence of length `len` led by
// s[pos], looking at no more than the bytes that exist.
bool fits(std::string_view s, size_t pos, int len) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  for (int k = 1; k < len && pos + k < s.size(); ++k) {
    const auto b = static_cast<uint8_t>(s[pos + k]);
    if (k == 1 ? !valid_second(lead, b) : !is_continuation(b)) return false;
  }
  return true;
}

}  // namespace

size_t utf8_error_offset(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const int len = sequence_length(static_cast<uint8_t>(s[i]));
    if (len == 0 || i + len > s.size() || !fits(s, i, len)) return i;
    i += len;
  }
  return s.size();
}

bool is_valid_utf8(std::string_view s) { return utf8_error_offset(s) == s.size(); }

size_t complete_utf8_prefix(std::string_view s) {
  // A lead byte is never a continuation, so no earlier sequence can swallow it:
  // a partial tail starts at the last lead byte, within the last three bytes.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto b = static_cast<uint8_t>(s[pos]);
    if (is_continuation(b)) continue;
    const int len = sequence_length(b);
    if (len > static_cast<int>(back) && fits(s, pos, len)) return pos;
    return n;
  }
  return n;
}

std::string utf8_lossy(std::string_view s) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const int len = sequence_length(static_cast<uint8_t>(s[i]));
    if (len == 0) {  // a continuation or a never-valid byte: a subpart of its own
      out += kReplacement;
      ++i;
      continue;
    }
    // How many bytes of the announced sequence are there and fit it.
    int fit = 1;
    const auto lead = static_cast<uint8_t>(s[i]);
    while (fit < len && i + fit < s.size()) {
      const auto b = static_cast<uint8_t>(s[i + fit]);
      if (fit == 1 ? !valid_second(lead, b) : !is_continuation(b)) break;
      ++fit;
    }
    if (fit == len) {
      out.append(s.data() + i, static_cast<size_t>(len));
    } else {
      out += kReplacement;  // the lead and the continuation bytes that fitted
    }
    i += static_cast<size_t>(fit);
  }
  return out;
}

}  // namespace fdpp
