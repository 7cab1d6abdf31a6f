// The GPT-2 byte-level BPE tokenizer on the real GPT-2 vocab.json + merges.txt:
// fixed expectations from an independent implementation (tests/fixtures), the
// pre-tokenizer's splits, BPE against a naive O(n²) merge loop written here, byte
// coverage, special tokens, OPT-style files, streaming, lossy UTF-8, corrupt files.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "fixtures/gpt2_fixtures.h"
#include "model/config.h"
#include "model/model_tokenizer.h"
#include "tokenizer/gpt2_bpe_tokenizer.h"
#include "tokenizer/gpt2_pretokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

fs::path gpt2_dir() { return test::models_dir() / "tokenizers" / "gpt2"; }

const Gpt2BpeTokenizer& gpt2() {
  static std::unique_ptr<Gpt2BpeTokenizer> tok = [] {
    Gpt2BpeTokenizer::Options o;
    o.special_pieces = {"<|endoftext|>"};
    o.eos_piece = "<|endoftext|>";
    auto r = Gpt2BpeTokenizer::load(gpt2_dir() / "vocab.json", gpt2_dir() / "merges.txt", o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }();
  if (!tok) throw std::runtime_error("the GPT-2 tokenizer did not load");
  return *tok;
}

std::vector<int> enc(const Tokenizer& t, std::string_view s, bool bos = false) {
  auto r = t.encode(s, bos);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<int>{};
}

std::string without(std::string s, const std::string& piece) {
  for (size_t p; (p = s.find(piece)) != std::string::npos;) s.erase(p, piece.size());
  return s;
}

TEST(Gpt2Tokenizer, FixturesFromTheReferenceImplementation) {
  const Gpt2BpeTokenizer& t = gpt2();
  EXPECT_EQ(t.vocab_size(), 50257);
  EXPECT_EQ(t.eos_id(), 50256);
  const auto fixtures = nlohmann::json::parse(test::kGpt2Fixtures);
  ASSERT_GE(fixtures.size(), 40u);
  for (const auto& f : fixtures) {
    const std::string text = f["text"].get<std::string>();
    const std::vector<int> want = f["ids"].get<std::vector<int>>();
    EXPECT_EQ(enc(t, text), want) << "text: " << nlohmann::json(text).dump();
    // Byte-level BPE loses nothing; the special token decodes to no text.
    EXPECT_EQ(t.decode(want), without(text, "<|endoftext|>")) << nlohmann::json(text).dump();
  }
}

TEST(Gpt2Tokenizer, WellKnownIds) {
  const Gpt2BpeTokenizer& t = gpt2();
  EXPECT_EQ(enc(t, "Hello world"), (std::vector<int>{15496, 995}));
  EXPECT_EQ(t.piece_to_id("Ġworld"), 995);
  EXPECT_EQ(t.token_text(995), "Ġworld");
  EXPECT_EQ(t.piece_to_id("!"), 0);
  EXPECT_EQ(enc(t, "<|endoftext|>"), (std::vector<int>{50256}));
  EXPECT_TRUE(t.is_special(50256));
  EXPECT_EQ(t.decode(std::vector<int>{50256}), "");
  EXPECT_EQ(t.token_text(50257), Tokenizer::invalid_id_text(50257));
}

TEST(Gpt2Tokenizer, PreTokenizerSplits) {
  auto pre = Gpt2PreTokenizer::create();
  ASSERT_TRUE(pre.ok()) << pre.status().to_string();
  // Expected splits: Python `regex` with GPT-2's pattern.
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"I'm  here\n\n  x", {"I", "'m", " ", " here", "\n\n ", " x"}},
      {"Hello   world   ", {"Hello", "  ", " world", "   "}},
      {"a1b2 3.5%", {"a", "1", "b", "2", " 3", ".", "5", "%"}},
      // U+180E is no longer whitespace (Unicode 6.3); U+0085 is.
      {"x\u180Ey \u0085z", {"x", "\u180E", "y", " ", "\u0085", "z"}},
      {"  \n \t", {"  \n \t"}},
      {"", {}},
  };
  for (const auto& [text, want] : cases) {
    auto got = pre->split(text);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    std::vector<std::string> pieces(got->begin(), got->end());
    EXPECT_EQ(pieces, want) << nlohmann::json(text).dump();
  }
}

// The textbook BPE: rescan all pairs after every merge, merge every occurrence of the
// best pair left to right (OpenAI's encoder.py). O(n²), independent of fdpp's queue.
std::vector<int> naive_bpe(const Gpt2BpeTokenizer& t,
                           const std::map<std::pair<std::string, std::string>, int>& ranks,
                           const std::string& word_bytes) {
  std::vector<std::string> sym;  // ASCII letters stand for themselves, the space is "Ġ"
  for (char c : word_bytes) sym.push_back(c == ' ' ? "\xC4\xA0" : std::string(1, c));
  for (;;) {
    int best = INT32_MAX;
    for (size_t i = 0; i + 1 < sym.size(); ++i)
      if (auto it = ranks.find({sym[i], sym[i + 1]}); it != ranks.end())
        best = std::min(best, it->second);
    if (best == INT32_MAX) break;
    std::vector<std::string> out;
    for (size_t i = 0; i < sym.size();) {
      auto it = i + 1 < sym.size() ? ranks.find({sym[i], sym[i + 1]}) : ranks.end();
      if (it != ranks.end() && it->second == best) {
        out.push_back(sym[i] + sym[i + 1]);
        i += 2;
      } else {
        out.push_back(sym[i++]);
      }
    }
    sym = std::move(out);
  }
  std::vector<int> ids;
  for (const auto& s : sym) ids.push_back(t.piece_to_id(s));
  return ids;
}

TEST(Gpt2Tokenizer, MergesEqualTheTextbookAlgorithmOnRandomWords) {
  const Gpt2BpeTokenizer& t = gpt2();
  std::map<std::pair<std::string, std::string>, int> ranks;
  std::istringstream merges(test::read_file(gpt2_dir() / "merges.txt"));
  std::string line;
  int rank = 0;
  while (std::getline(merges, line)) {
    if (line.rfind("#version", 0) == 0 || line.empty()) continue;
    const size_t sp = line.find(' ');
    ranks.emplace(std::make_pair(line.substr(0, sp), line.substr(sp + 1)), rank++);
  }
  ASSERT_EQ(ranks.size(), 50000u);
  std::mt19937 rng(11);
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxzETAOIN";
  for (int n = 0; n < 300; ++n) {
    // One pre-token: a letter run of 1..40, sometimes with a leading space.
    std::string w = rng() % 2 ? " " : "";
    const int len = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) w += letters[rng() % letters.size()];
    EXPECT_EQ(enc(t, w), naive_bpe(t, ranks, w)) << "'" << w << "'";
  }
}

TEST(Gpt2Tokenizer, EveryByteAndLongWords) {
  const Gpt2BpeTokenizer& t = gpt2();
  // Each ASCII byte alone is one token that decodes to itself.
  for (int b = 0; b < 128; ++b) {
    const std::string s(1, static_cast<char>(b));
    const auto ids = enc(t, s);
    ASSERT_EQ(ids.size(), 1u) << b;
    EXPECT_EQ(t.decode(ids), s) << b;
  }
  // A 200 000-letter word: O(n log n) merging keeps this well under a second.
  std::string long_word(200000, 'a');
  for (size_t i = 0; i < long_word.size(); i += 7) long_word[i] = 'b';
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = enc(t, long_word);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 2.0) << "BPE of one long word is not O(n log n)";
  EXPECT_LT(ids.size(), long_word.size() / 2);
  EXPECT_EQ(t.decode(ids), long_word);
}

TEST(Gpt2Tokenizer, InvalidUtf8IsRefusedAndInvalidIdsShow) {
  const Gpt2BpeTokenizer& t = gpt2();
  auto r = t.encode("ok\xC3", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("offset 2"), std::string::npos);
  EXPECT_EQ(t.decode(std::vector<int>{15496, 99999, 995}), "Hello<invalid:99999> world");
}

TEST(Gpt2Tokenizer, StreamingHoldsBackSplitCharacters) {
  const Gpt2BpeTokenizer& t = gpt2();
  // Emoji and CJK are split over byte-level tokens: "😀" is 3 tokens in GPT-2.
  const std::string text = "emoji 😀😃 and 👍🏽, 日本語, π≈3";
  const auto ids = enc(t, text);
  bool saw_partial = false;
  for (size_t n = 1; n <= ids.size(); ++n)
    saw_partial |= t.ends_mid_character(std::span<const int>(ids).first(n));
  EXPECT_TRUE(saw_partial)
      << "no prefix of the ids ends inside a character: the test proves nothing";
  EXPECT_FALSE(t.ends_mid_character(ids));
  StreamDecoder sd(t);
  std::string all;
  for (int id : ids) {
    const std::string chunk = sd.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk)) << "push(" << id << ") gave a partial character";
    EXPECT_EQ(chunk.find("\xEF\xBF\xBD"), std::string::npos) << "a U+FFFD placeholder escaped";
    all += chunk;
  }
  all += sd.flush();
  EXPECT_EQ(all, text);
  // Primed with a context whose last token ends inside a character: that token stays
  // unread (a GPT-2 token can hold a whole character before the partial one, e.g. " \xF0\x9F"),
  // and the first push that completes the character emits the token's text whole.
  size_t k = 1;
  while (k < ids.size() && !t.ends_mid_character(std::span<const int>(ids).first(k))) ++k;
  ASSERT_LT(k, ids.size());
  const std::vector<int> head(ids.begin(), ids.begin() + k);
  const std::string settled = t.decode(std::span<const int>(ids).first(k - 1));
  StreamDecoder primed(t, head);
  std::string rest;
  for (size_t i = k; i < ids.size(); ++i) rest += primed.push(ids[i]);
  rest += primed.flush();
  EXPECT_EQ(settled + rest, text);
}

TEST(Utf8Lossy, MaximalSubpartsBecomeOneReplacementEach) {
  // Expected values: Python's bytes.decode("utf-8", errors="replace").
  const std::string R = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"\xE4\xBD", R},
      {"\xE4\xBD"
       "a",
       R + "a"},
      {"\xF0\x9F\x98", R},
      {"a\x80"
       "b",
       "a" + R + "b"},
      {"\xED\xA0\x80", R + R + R},
      {"\xC0\xAF", R + R},
      {"\xF4\x90\x80\x80", R + R + R + R},
      {"\xE2\x82\xAC\xE2", "\xE2\x82\xAC" + R},
      {"plain", "plain"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(utf8_lossy(in), want) << in.size() << " bytes";
}

// ---- loading through load_tokenizer ----------------------------------------------

ModelConfig cfg_of(Architecture arch, int vocab, int bos = -1, int eos = -1) {
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = vocab;
  c.bos_token_id = bos;
  if (eos >= 0) c.eos_token_ids = {eos};
  return c;
}

// OPT's layout: <s> <pad> </s> <unk> first. Real OPT files number the other pieces in
// fairseq's dictionary order (OPT's "Hello" is 31414, GPT-2's 15496), not GPT-2 + 4; this
// folder keeps GPT-2's order shifted by 4 only to test the special-token handling.
fs::path opt_style_dir(bool with_side_files) {
  const fs::path dir = test::scratch_dir(with_side_files ? "opt_tok_side" : "opt_tok_plain");
  auto vocab = nlohmann::json::parse(test::read_file(gpt2_dir() / "vocab.json"));
  nlohmann::json shifted = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    if (it.key() != "<|endoftext|>") shifted[it.key()] = it.value().get<int>() + 4;
  test::write_file(dir / "vocab.json", shifted.dump());
  test::write_file(dir / "merges.txt", test::read_file(gpt2_dir() / "merges.txt"));
  if (with_side_files)  // facebook/opt-*'s special_tokens_map.json
    test::write_file(dir / "special_tokens_map.json",
                     R"({"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>",
                         "pad_token": "<pad>"})");
  return dir;
}

TEST(Gpt2Tokenizer, OptStyleFolderAddsItsBosAndKeepsSpecialsApart) {
  for (bool side : {false, true}) {
    auto r = load_tokenizer(opt_style_dir(side), cfg_of(Architecture::kOpt, 50272, 2, 2));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const Tokenizer& t = **r;
    EXPECT_EQ(t.vocab_size(), 50260);  // GPT-2's 50257 less <|endoftext|>, plus 4
    EXPECT_TRUE(t.add_bos_by_default());
    EXPECT_EQ(t.bos_id(), 2);
    EXPECT_EQ(t.eos_id(), 2);
    EXPECT_EQ(enc(t, "Hello world", true), (std::vector<int>{2, 15496 + 4, 995 + 4}));
    EXPECT_EQ(t.decode(std::vector<int>{2, 15496 + 4, 995 + 4, 2}), "Hello world");
    // </s> in text is the special token either way; <s> only without the side files
    // (facebook's special_tokens_map.json does not name it, so it is plain text there).
    EXPECT_EQ(enc(t, "a</s>"), (std::vector<int>{64 + 4, 2}));
    if (side) {
      EXPECT_EQ(enc(t, "<s>"), (std::vector<int>{27 + 4, 82 + 4, 29 + 4}));  // "<" "s" ">"
    } else {
      EXPECT_EQ(enc(t, "<s>"), (std::vector<int>{0}));
    }
  }
  // GPT-2's own folder: no BOS by default.
  auto g = load_tokenizer(gpt2_dir(), cfg_of(Architecture::kLlama, 50257, 50256, 50256));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_FALSE((*g)->add_bos_by_default());
  EXPECT_EQ(enc(**g, "Hello world", (*g)->add_bos_by_default()), (std::vector<int>{15496, 995}));
  // A vocabulary larger than the model's embedding is refused.
  auto small = load_tokenizer(gpt2_dir(), cfg_of(Architecture::kOpt, 50000));
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
}

TEST(Gpt2Tokenizer, CorruptFilesAreClearErrors) {
  const std::string merges = test::read_file(gpt2_dir() / "merges.txt");
  const std::string vocab = test::read_file(gpt2_dir() / "vocab.json");
  struct Case {
    std::string vocab, merges, needle;
  } cases[] = {
      {"[1, 2]", merges, "object"},
      {"{oops", merges, "JSON"},
      {R"({"a": 0, "b": 0})", "", "twice"},
      {R"({"a": 5})", "", "[0, 1)"},
      {R"({"a": 0, "b": 1})", "", "byte-level symbol"},
      {vocab, "#version: 0.2\nĠ t\nno_space_here\n", "line 3"},
      {vocab, "#version: 0.2\nĠ zzzzzzzzzz\n", "lacks"},
  };
  for (const Case& c : cases) {
    auto r = Gpt2BpeTokenizer::from_strings(c.vocab, c.merges, {});
    ASSERT_FALSE(r.ok()) << c.needle;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << r.status().to_string();
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
  auto missing = Gpt2BpeTokenizer::load(gpt2_dir() / "nope.json", gpt2_dir() / "merges.txt", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fdpp
