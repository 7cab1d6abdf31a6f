// Template source -> tokens, with Jinja2's whitespace rules as transformers configures
// them: trim_blocks (the first newline after a block or comment tag is dropped),
// lstrip_blocks (spaces and tabs from the start of a line to a block or comment tag are
// dropped; `{%+` opts out), `-` on a tag strips all whitespace on that side, `\r\n` and
// `\r` read as `\n`, and one trailing newline of the template is dropped
// (keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fdpp::jinja {

enum class Tok : uint8_t { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  Tok type;
  std::string text;  // kText, kName, kString (unescaped), kOp
  int64_t ival = 0;
  double fval = 0;
  int line = 1, column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws jinja::Error (with the position) on an unterminated tag, comment or string.
std::vector<Token> lex(std::string_view source, const LexOptions& options = {});

}  // namespace fdpp::jinja
