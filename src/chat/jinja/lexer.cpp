#include "chat/jinja/lexer.h"

#include <cmath>
#include <cstdlib>

#include "chat/jinja/error.h"
#include "chat/jinja/value.h"

namespace fdpp::jinja {
namespace {

std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\r') {
      out += '\n';
      if (k + 1 < s.size() && s[k + 1] == '\n') ++k;
    } else {
      out += s[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& o) : src_(std::move(src)), opt_(o) {}

  std::vector<Token> run() {
    bool strip_ws = false, trim_nl = false;
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      size_t text_begin = pos_;
      if (strip_ws) {
        while (text_begin < start && is_ws(src_[text_begin])) ++text_begin;
      } else if (trim_nl && text_begin < start && src_[text_begin] == '\n') {
        ++text_begin;
      }
      std::string text = src_.substr(text_begin, start - text_begin);
      strip_ws = trim_nl = false;
      if (start == src_.size()) {
        emit_text(text, text_begin);
        break;
      }
      char kind = src_[start + 1];
      char flag = start + 2 < src_.size() ? src_[start + 2] : 0;
      if (flag == '-') {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      } else if (flag != '+' && kind != '{' && opt_.lstrip_blocks) {
        size_t nl = text.rfind('\n');
        size_t tail = nl == std::string::npos ? 0 : nl + 1;
        bool line_start = nl != std::string::npos || text_begin == 0 || src_[text_begin - 1] == '\n';
        bool blank = true;
        for (size_t k = tail; k < text.size(); ++k) blank &= text[k] == ' ' || text[k] == '\t';
        if (line_start && blank) text.resize(tail);
      }
      emit_text(text, text_begin);
      pos_ = start + 2 + (flag == '-' || flag == '+');
      char end_flag = 0;
      if (kind == '#') {
        size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) fail("unterminated comment", start);
        end_flag = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
        pos_ = end + 2;
      } else {
        const bool block = kind == '%';
        size_t first = out_.size();
        push(block ? Tok::kBlockBegin : Tok::kVarBegin, "", start);
        end_flag = lex_tag(block ? '%' : '}', start);
        push(block ? Tok::kBlockEnd : Tok::kVarEnd, "", pos_ - 2);
        if (block && out_.size() == first + 3 && out_[first + 1].type == Tok::kName &&
            out_[first + 1].text == "raw") {
          out_.resize(first);
          end_flag = lex_raw(start);
        }
      }
      if (end_flag == '-') {
        strip_ws = true;
      } else if (kind != '{' && end_flag != '+' && opt_.trim_blocks) {
        trim_nl = true;
      }
    }
    push(Tok::kEof, "", src_.size());
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t k = from; k + 1 < src_.size(); ++k)
      if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    return src_.size();
  }

  void position(size_t at, int& line, int& col) const {
    line = 1;
    size_t line_start = 0;
    for (size_t k = 0; k < at && k < src_.size(); ++k) {
      if (src_[k] == '\n') {
        ++line;
        line_start = k + 1;
      }
    }
    col = static_cast<int>(at - line_start) + 1;
  }

  [[noreturn]] void fail(const std::string& msg, size_t at) const {
    int line, col;
    position(at, line, col);
    throw Error(msg, line, col);
  }

  Token& push(Tok t, std::string text, size_t at) {
    Token tok{t, std::move(text)};
    // Positions are computed incrementally: tokens arrive in source order.
    for (; scan_ < at && scan_ < src_.size(); ++scan_) {
      if (src_[scan_] == '\n') {
        ++line_;
        line_start_ = scan_ + 1;
      }
    }
    tok.line = line_;
    tok.column = static_cast<int>(at - line_start_) + 1;
    out_.push_back(std::move(tok));
    return out_.back();
  }

  void emit_text(const std::string& text, size_t at) {
    if (!text.empty()) push(Tok::kText, text, at);
  }

  // Tokens of one {{ }} or {% %} up to its end; returns the end's '-' or '+' flag.
  char lex_tag(char closer, size_t tag_start) {
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) fail(closer == '%' ? "unterminated block tag" : "unterminated '{{'", tag_start);
      char c = src_[pos_];
      if (depth == 0) {
        for (char flag : {'-', '+', '\0'}) {
          size_t p = pos_ + (flag ? 1 : 0);
          if (flag && c != flag) continue;
          if (p + 1 < src_.size() && src_[p] == closer && src_[p + 1] == '}') {
            pos_ = p + 2;
            return flag;
          }
        }
      }
      size_t at = pos_;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        push(Tok::kName, src_.substr(at, pos_ - at), at);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number(at);
      } else if (c == '\'' || c == '"') {
        lex_string(at);
      } else {
        static const char* kOps2[] = {"**", "//", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const char* o : kOps2)
          if (src_.compare(pos_, 2, o) == 0) op = o;
        if (op.size() == 1 && std::string_view("+-*/%~<>=.,:|()[]{}!").find(c) == std::string_view::npos)
          fail(std::string("unexpected character '") + c + "'", at);
        if (op == "!") fail("unexpected character '!'", at);
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        pos_ += op.size();
        push(Tok::kOp, op, at);
      }
    }
  }

  void lex_number(size_t at) {
    std::string digits;
    bool is_float = false;
    auto take_digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        if (src_[pos_] != '_') digits += src_[pos_];
        ++pos_;
      }
    };
    take_digits();
    // "1.5" is a float; "x.0.1" style attribute chains never start with a digit.
    bool after_dot = !out_.empty() && out_.back().type == Tok::kOp && out_.back().text == ".";
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      digits += '.';
      ++pos_;
      take_digits();
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        is_float = true;
        digits += src_.substr(pos_, p - pos_);
        pos_ = p;
        take_digits();
      }
    }
    Token& t = push(is_float ? Tok::kFloat : Tok::kInt, digits, at);
    if (is_float) {
      t.fval = std::strtod(digits.c_str(), nullptr);
    } else {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(digits.c_str(), &end, 10);
      if (errno == ERANGE) fail("integer literal " + digits + " is too large", at);
      t.ival = v;
    }
  }

  // Python's string escapes (Jinja2 decodes literals with unicode-escape); an unknown
  // escape such as \d stays as written.
  void lex_string(size_t at) {
    char q = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) fail("unterminated string literal", at);
      char c = src_[pos_++];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) fail("unterminated string literal", at);
      char e = src_[pos_++];
      auto hex = [&](int n) -> char32_t {
        if (pos_ + n > src_.size()) fail("truncated \\x/\\u escape", at);
        char32_t v = 0;
        for (int k = 0; k < n; ++k) {
          char h = src_[pos_ + k];
          if (!std::isxdigit(static_cast<unsigned char>(h))) fail("malformed \\x/\\u escape", at);
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        pos_ += n;
        if (v > 0x10FFFF) fail("escape outside Unicode", at);
        return v;
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;
        case 'x': append_utf8(out, hex(2)); break;
        case 'u': append_utf8(out, hex(4)); break;
        case 'U': append_utf8(out, hex(8)); break;
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0';
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              v = v * 8 + (src_[pos_++] - '0');
            append_utf8(out, static_cast<char32_t>(v));
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    push(Tok::kString, out, at);
  }

  // {% raw %}...{% endraw %}: the body is text, tags in it are not interpreted.
  char lex_raw(size_t tag_start) {
    size_t search = pos_;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) fail("unterminated {% raw %} block", tag_start);
      size_t p = open + 2;
      bool minus = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      while (p < src_.size() && is_ws(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && is_ws(src_[p])) ++p;
      char flag = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) flag = src_[p++];
      if (src_.compare(p, 2, "%}") != 0) fail("malformed {% endraw %}", open);
      std::string body = src_.substr(pos_, open - pos_);
      if (minus) {
        while (!body.empty() && is_ws(body.back())) body.pop_back();
      }
      emit_text(body, pos_);
      pos_ = p + 2;
      return flag;
    }
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  std::vector<Token> out_;
  size_t scan_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace fdpp::jinja
