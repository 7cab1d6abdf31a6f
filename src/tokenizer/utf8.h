// UTF-8 checks for streaming text out of byte-level tokens: a token may end in
// the middle of a character (SentencePiece byte-fallback pieces such as <0xF0>,
// GPT-2 byte-level BPE), and a partial character must not reach the user.
// Validity is RFC 3629 strict, as SentencePiece decodes: no overlong forms, no
// surrogates (U+D800..DFFF), nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fdpp {

bool is_valid_utf8(std::string_view s);

// Offset of the first byte that does not start a valid character (a truncated
// one at the end included), or s.size() when all of `s` is valid.
size_t utf8_error_offset(std::string_view s);

// Length of the longest prefix of `s` that does not end in a partial character:
// s.size() unless `s` ends with the first 1-3 bytes of a valid multi-byte
// sequence (which more bytes could complete); then the offset of its lead byte.
// Invalid bytes elsewhere do not shorten it: they can never become valid, so
// holding them back would gain nothing.
size_t complete_utf8_prefix(std::string_view s);

// `s` with every maximal invalid subpart (a byte that starts no valid sequence, or the
// longest prefix of a valid sequence that is cut short) replaced by one U+FFFD: the
// Unicode "substitution of maximal subparts" that Python's errors="replace" and
// Rust's String::from_utf8_lossy both implement (GPT-2 byte-level BPE decoding).
std::string utf8_lossy(std::string_view s);

}  // namespace fdpp
