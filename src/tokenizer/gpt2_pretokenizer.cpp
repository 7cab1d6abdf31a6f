#include "tokenizer/gpt2_pretokenizer.h"

#include <string>

#ifdef FDPP_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace fdpp {
namespace {

// GPT-2's pattern with one change that keeps it equal to the reference engines: PCRE2
// counts U+180E (MONGOLIAN VOWEL SEPARATOR) as \s, a Zs character before Unicode 6.3;
// Python's `regex` and Oniguruma (tokenizers) follow today's White_Space property, where
// it is not (it is Cf, so it belongs to the "other" run). So \s is written [^\S\x{180E}]
// and \S as [\S\x{180E}]. Checked over every code point against Python's `regex`: the
// only other differences are letters and digits newer than PCRE2's Unicode tables.
constexpr char kPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?(?:[^\s\p{L}\p{N}]|\x{180E})+)"
    R"(|[^\S\x{180E}]+(?![\S\x{180E}])|[^\S\x{180E}]+)";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct Gpt2PreTokenizer::Code {
  pcre2_code* re = nullptr;
  ~Code() {
    if (re) pcre2_code_free(re);
  }
};

Gpt2PreTokenizer::Gpt2PreTokenizer(std::unique_ptr<Code> code) : code_(std::move(code)) {}
Gpt2PreTokenizer::Gpt2PreTokenizer(Gpt2PreTokenizer&&) noexcept = default;
Gpt2PreTokenizer& Gpt2PreTokenizer::operator=(Gpt2PreTokenizer&&) noexcept = default;
Gpt2PreTokenizer::~Gpt2PreTokenizer() = default;

Result<Gpt2PreTokenizer> Gpt2PreTokenizer::create() {
  auto code = std::make_unique<Code>();
  int err = 0;
  PCRE2_SIZE at = 0;
  code->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                           PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
  if (!code->re)
    return Internal("GPT-2 pre-tokenizer pattern does not compile at offset " +
                    std::to_string(at) + ": " + pcre2_message(err));
  // JIT is an optimisation: without it (no JIT support in this PCRE2) the interpreter runs.
  (void)pcre2_jit_compile(code->re, PCRE2_JIT_COMPLETE);
  return Gpt2PreTokenizer(std::move(code));
}

Result<std::vector<std::string_view>> Gpt2PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> out;
  if (text.empty()) return out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->re, nullptr);
  if (!md) return OutOfMemory("GPT-2 pre-tokenizer: no memory for PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  Status status = Status::Ok();
  while (pos < text.size()) {
    // The caller validated the UTF-8, so PCRE2 need not re-check it at every offset
    // (which would make splitting quadratic).
    const int rc = pcre2_match(code_->re, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md,
                               nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      out.push_back(text.substr(pos));
      break;
    }
    if (rc < 0) {
      status = Internal("GPT-2 pre-tokenizer: matching at byte " + std::to_string(pos) +
                        " failed: " + pcre2_message(rc));
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t begin = ov[0], end = ov[1];
    if (begin > pos) out.push_back(text.substr(pos, begin - pos));  // an unmatched stretch
    if (end <= begin) {  // no alternative matches empty; never loop on one that did
      status = Internal("GPT-2 pre-tokenizer: empty match at byte " + std::to_string(begin));
      break;
    }
    out.push_back(text.substr(begin, end - begin));
    pos = end;
  }
  pcre2_match_data_free(md);
  if (!status.ok()) return status;
  return out;
}

}  // namespace fdpp

#else  // !FDPP_HAVE_PCRE2

namespace fdpp {

struct Gpt2PreTokenizer::Code {};
Gpt2PreTokenizer::Gpt2PreTokenizer(std::unique_ptr<Code> code) : code_(std::move(code)) {}
Gpt2PreTokenizer::Gpt2PreTokenizer(Gpt2PreTokenizer&&) noexcept = default;
Gpt2PreTokenizer& Gpt2PreTokenizer::operator=(Gpt2PreTokenizer&&) noexcept = default;
Gpt2PreTokenizer::~Gpt2PreTokenizer() = default;

Result<Gpt2PreTokenizer> Gpt2PreTokenizer::create() {
  return Unsupported("this fdpp was built without PCRE2 (libpcre2-dev), which the GPT-2 "
                     "byte-level BPE tokenizer needs for its pre-tokenizer");
}
Result<std::vector<std::string_view>> Gpt2PreTokenizer::split(std::string_view) const {
  return Unsupported("built without PCRE2");
}

}  // namespace fdpp

#endif  // FDPP_HAVE_PCRE2
