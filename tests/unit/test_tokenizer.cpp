// Tokenizer tests on the real Llama 2 and stories260K SentencePiece models.
// Expected ids were produced by the Python `sentencepiece` module on the same
// tokenizer.model files.
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "model/model_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

fs::path llama2_model() { return test::models_dir() / "tokenizers" / "llama2" / "tokenizer.model"; }

const Tokenizer& llama2() {
  static std::unique_ptr<SentencePieceTokenizer> tok = [] {
    auto r = SentencePieceTokenizer::load(llama2_model(), {});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }();
  if (!tok) throw std::runtime_error("the Llama 2 tokenizer did not load");
  return *tok;
}

std::vector<int> enc(const Tokenizer& t, std::string_view s, bool bos) {
  auto r = t.encode(s, bos);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<int>{};
}

std::string dec(const Tokenizer& t, const std::vector<int>& ids) { return t.decode(ids); }

ModelConfig llama_cfg(int vocab) {
  ModelConfig c;
  c.vocab_size = vocab;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  return c;
}

// Streams `ids` through a decoder and checks every chunk; returns the concatenation.
std::string stream_all(StreamDecoder& sd, const std::vector<int>& ids, int* held = nullptr) {
  std::string all;
  for (int id : ids) {
    std::string chunk = sd.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk)) << "push(" << id << ") gave broken UTF-8";
    if (chunk.empty() && held) ++*held;
    all += chunk;
  }
  std::string rest = sd.flush();
  EXPECT_TRUE(is_valid_utf8(rest));
  return all + rest;
}

const char* kTexts[] = {
    "Hello world",
    "héllo wörld",
    "你好，世界",
    "🦙🚀",
    " leading  spaces ",
    "line1\nline2\n\n",
    "The quick brown fox jumps over the lazy dog.",
    "Mixed: café 日本語 🦙 ok",
    "\ttab\tseparated",
    "trailing newline\n",
    "  two leading",
    "e\u0301 combining",
    "x = f(y) // code {\n  return 0;\n}",
    "한국어 텍스트",
    "مرحبا بالعالم",
    "👨‍👩‍👧 family",
    "ℌ𝔢𝔩𝔩𝔬",
    "a",
    " ",
};

// ---- utf8 ----------------------------------------------------------------------

TEST(Utf8, Validity) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("héllo 日本 🦙 \xF4\x8F\xBF\xBF"));  // U+10FFFF is the last one
  EXPECT_FALSE(is_valid_utf8("\x80"));                          // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xC3"));                          // truncated
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));                      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));                  // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));                  // surrogate U+D800
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));              // U+110000
  EXPECT_FALSE(is_valid_utf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\xFF"));
  EXPECT_FALSE(is_valid_utf8("ok\xE2\x82"));
  EXPECT_EQ(utf8_error_offset("ok\xE2\x82"), 2u);
  EXPECT_EQ(utf8_error_offset("é\xFFx"), 2u);
  EXPECT_EQ(utf8_error_offset("fine"), 4u);
}

TEST(Utf8, CompletePrefix) {
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
  EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\xA6"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\xA6\x99"), 5u);
  EXPECT_EQ(complete_utf8_prefix("\xC3"), 0u);
  EXPECT_EQ(complete_utf8_prefix("é\xE2\x82"), 2u);
  // Never completable: nothing to wait for.
  EXPECT_EQ(complete_utf8_prefix("\x80"), 1u);
  EXPECT_EQ(complete_utf8_prefix("\xE0\x80"), 2u);  // would be overlong
  EXPECT_EQ(complete_utf8_prefix("\xED\xA0"), 2u);  // would be a surrogate
  EXPECT_EQ(complete_utf8_prefix("\xF4\x90"), 2u);  // would pass U+10FFFF
  EXPECT_EQ(complete_utf8_prefix("\xF5\x80"), 2u);
  EXPECT_EQ(complete_utf8_prefix("\xC3\x41"), 2u);
  EXPECT_EQ(complete_utf8_prefix("\xFF\xF0\x9F"), 1u);
}

// ---- encode / decode -----------------------------------------------------------

TEST(SentencePiece, Llama2KnownIds) {
  const Tokenizer& t = llama2();
  EXPECT_EQ(t.vocab_size(), 32000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos_by_default());
  EXPECT_FALSE(t.add_eos_by_default());
  EXPECT_EQ(enc(t, "Hello world", true), (std::vector<int>{1, 15043, 3186}));
  EXPECT_EQ(enc(t, "Hello world", false), (std::vector<int>{15043, 3186}));
  EXPECT_EQ(enc(t, "héllo wörld", false), (std::vector<int>{298, 3610, 417, 281, 1340, 430}));
  EXPECT_EQ(enc(t, "你好，世界", false),
            (std::vector<int>{29871, 30919, 31076, 30214, 30793, 30967}));
  EXPECT_EQ(enc(t, "🦙🚀", false),
            (std::vector<int>{29871, 243, 162, 169, 156, 243, 162, 157, 131}));
  EXPECT_EQ(enc(t, " leading  spaces ", false),
            (std::vector<int>{29871, 8236, 29871, 8162, 29871}));
  EXPECT_EQ(enc(t, "line1\nline2\n\n", false),
            (std::vector<int>{1196, 29896, 13, 1220, 29906, 13, 13}));
  EXPECT_EQ(enc(t, "The quick brown fox jumps over the lazy dog.", false),
            (std::vector<int>{450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203,
                              29889}));
  EXPECT_EQ(enc(t, "Mixed: café 日本語 🦙 ok", false),
            (std::vector<int>{341, 11925, 29901, 274, 28059, 29871, 30325, 30346, 30968, 29871,
                              243, 162, 169, 156, 3431}));
  EXPECT_EQ(enc(t, "", false), std::vector<int>{});
  EXPECT_EQ(enc(t, "", true), std::vector<int>{1});
}

TEST(SentencePiece, RoundTrips) {
  const Tokenizer& t = llama2();
  for (const char* s : kTexts) {
    auto ids = enc(t, s, false);
    EXPECT_EQ(dec(t, ids), s);
    ids = enc(t, s, true);
    EXPECT_EQ(dec(t, ids), s) << "with BOS";
  }
  std::string nul("\0nul", 4);
  EXPECT_EQ(dec(t, enc(t, nul, true)), nul);
}

TEST(SentencePiece, DecodeMatchesSentencePieceRules) {
  const Tokenizer& t = llama2();
  // The first piece with text loses its leading space; BOS/EOS give no text.
  EXPECT_EQ(dec(t, {1, 15043}), "Hello");
  EXPECT_EQ(dec(t, {1, 29871, 8236}), " leading");
  EXPECT_EQ(dec(t, {15043, 2, 1, 3186}), "Hello world");
  EXPECT_EQ(dec(t, {0, 15043}), " \u2047  Hello");  // <unk> renders as " ⁇ "
  EXPECT_EQ(dec(t, {13, 15043}), "\n Hello");
  EXPECT_EQ(dec(t, {15043, 243, 162, 169, 156, 3186}), "Hello🦙 world");
  EXPECT_EQ(dec(t, {243}), "\uFFFD");  // an incomplete character
  EXPECT_EQ(dec(t, {243, 162}), "\uFFFD\uFFFD");
  EXPECT_EQ(t.token_text(15043), "▁Hello");
  EXPECT_EQ(t.token_text(243), "<0xF0>");
  EXPECT_EQ(t.token_text(1), "<s>");
}

TEST(SentencePiece, OutOfRangeIds) {
  const Tokenizer& t = llama2();
  EXPECT_EQ(dec(t, {32000}), "<invalid:32000>");
  EXPECT_EQ(dec(t, {-1}), "<invalid:-1>");
  EXPECT_EQ(dec(t, {15043, 32000, 3186}), "Hello<invalid:32000> world");
  // After an invalid id the next piece is not the first one: its space stays.
  EXPECT_EQ(dec(t, {32000, 15043}), "<invalid:32000> Hello");
  EXPECT_EQ(dec(t, {243, 162, 99999, 169, 156}), "\uFFFD\uFFFD<invalid:99999>\uFFFD\uFFFD");
  EXPECT_EQ(t.token_text(32000), "<invalid:32000>");
  EXPECT_FALSE(t.is_valid_id(32000));
  EXPECT_TRUE(t.is_valid_id(31999));
  std::vector<int> ids = {1, 15043, 32007};
  Status s = t.check_ids(ids);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("32007"), std::string::npos) << s.message();
  EXPECT_TRUE(t.check_ids(std::vector<int>{1, 2, 31999}).ok());
}

TEST(SentencePiece, InvalidUtf8InputIsRefused) {
  const Tokenizer& t = llama2();
  auto r = t.encode("abc\xFF", true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("offset 3"), std::string::npos) << r.status().message();
}

TEST(SentencePiece, Stories260K) {
  auto r = load_tokenizer(test::models_dir() / "stories260K", llama_cfg(512));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const Tokenizer& t = *r.value();
  EXPECT_EQ(t.vocab_size(), 512);
  EXPECT_TRUE(t.add_bos_by_default());
  EXPECT_EQ(enc(t, "Once upon a time", true), (std::vector<int>{1, 403, 407, 261, 378}));
  EXPECT_EQ(dec(t, {1, 403, 407, 261, 378}), "Once upon a time");
  // This model's normalizer collapses and trims whitespace (remove_extra_whitespaces):
  // those texts come back as Python's sentencepiece gives them.
  const std::pair<const char*, const char*> squeezed[] = {
      {" leading  spaces ", "leading spaces"},
      {"  two leading", "two leading"},
      {"x = f(y) // code {\n  return 0;\n}", "x = f(y) // code {\n return 0;\n}"},
      {" ", ""},
  };
  for (const char* s : kTexts) {
    std::string want = s;
    for (const auto& [in, out] : squeezed) {
      if (want == in) want = out;
    }
    EXPECT_EQ(dec(t, enc(t, s, true)), want);
  }
}

// ---- loading -------------------------------------------------------------------

TEST(LoadTokenizer, TokenizerConfigFlags) {
  auto dir = test::scratch_dir("tok_flags");
  test::write_file(dir / "tokenizer.model", test::read_file(llama2_model()));
  auto r = load_tokenizer(dir, llama_cfg(32000));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r.value()->add_bos_by_default());  // no tokenizer_config.json: Llama default

  test::write_file(dir / "tokenizer_config.json",
                   R"({"add_bos_token": false, "add_eos_token": true,
                       "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})");
  r = load_tokenizer(dir, llama_cfg(32000));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r.value()->add_bos_by_default());
  EXPECT_TRUE(r.value()->add_eos_by_default());
  EXPECT_EQ(r.value()->bos_id(), 1);
  EXPECT_EQ(r.value()->eos_id(), 2);

  test::write_file(dir / "tokenizer_config.json", R"({"add_bos_token": "yes"})");
  r = load_tokenizer(dir, llama_cfg(32000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("add_bos_token"), std::string::npos);

  test::write_file(dir / "tokenizer_config.json", "{oops");
  r = load_tokenizer(dir, llama_cfg(32000));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tokenizer_config.json"), std::string::npos);
}

TEST(LoadTokenizer, MissingTokenizerSaysUsePromptIds) {
  auto dir = test::scratch_dir("tok_missing");
  auto r = load_tokenizer(dir, llama_cfg(32000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("--prompt-ids"), std::string::npos);
  auto s = SentencePieceTokenizer::load(dir / "tokenizer.model", {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
}

TEST(LoadTokenizer, CorruptModelIsAnError) {
  auto dir = test::scratch_dir("tok_corrupt");
  const std::string good = test::read_file(llama2_model());
  ASSERT_GT(good.size(), 1000u);
  std::mt19937 rng(7);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  const std::string cases[] = {
      "",                                 // empty file
      noise,                              // random bytes
      good.substr(0, good.size() / 3),    // truncated
      R"({"this": "is json"})",
      std::string(1000, '\0'),
  };
  for (const std::string& bytes : cases) {
    test::write_file(dir / "tokenizer.model", bytes);
    auto r = load_tokenizer(dir, llama_cfg(32000));
    ASSERT_FALSE(r.ok()) << "a " << bytes.size() << "-byte corrupt model loaded";
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << r.status().to_string();
    EXPECT_NE(r.status().message().find("tokenizer.model"), std::string::npos);
  }
}

TEST(LoadTokenizer, VocabularyLargerThanModelIsRefused) {
  auto r = load_tokenizer(llama2_model().parent_path(), llama_cfg(512));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("32000"), std::string::npos);
  // A model whose embedding is padded past the tokenizer is fine.
  EXPECT_TRUE(load_tokenizer(llama2_model().parent_path(), llama_cfg(32064)).ok());
}

// ---- streaming -----------------------------------------------------------------

TEST(StreamDecoder, EqualsFullDecode) {
  const Tokenizer& t = llama2();
  for (const char* s : kTexts) {
    for (bool bos : {false, true}) {
      auto ids = enc(t, s, bos);
      StreamDecoder sd(t);
      EXPECT_EQ(stream_all(sd, ids), dec(t, ids)) << s;
    }
  }
}

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  const Tokenizer& t = llama2();
  // 🦙 and 🚀 are four byte-fallback tokens each in Llama 2.
  auto ids = enc(t, "🦙🚀", true);
  StreamDecoder sd(t);
  std::vector<std::string> chunks;
  for (int id : ids) chunks.push_back(sd.push(id));
  chunks.push_back(sd.flush());
  std::vector<std::string> want = {"", "", "", "", "", "🦙", "", "", "", "🚀", ""};
  EXPECT_EQ(chunks, want);

  // A character cut off by the end of the stream comes out as decode() gives it.
  StreamDecoder cut(t);
  EXPECT_EQ(cut.push(15043), "Hello");
  EXPECT_EQ(cut.push(243), "");
  EXPECT_EQ(cut.push(162), "");
  EXPECT_EQ(cut.flush(), "\uFFFD\uFFFD");
  // flush() starts a new sequence: the first piece loses its space again.
  EXPECT_EQ(cut.push(3186), "world");
}

TEST(StreamDecoder, ContextKeepsTheLeadingSpace) {
  const Tokenizer& t = llama2();
  auto prompt = enc(t, "Once upon a time", true);
  auto gen = enc(t, " there was a llama 🦙 named Ünï.", false);
  gen.erase(gen.begin());  // the dummy-prefix space: a continuation has none
  std::vector<int> all = prompt;
  all.insert(all.end(), gen.begin(), gen.end());
  const std::string full = dec(t, all);
  const std::string head = dec(t, prompt);
  ASSERT_EQ(full.compare(0, head.size(), head), 0);

  StreamDecoder sd(t, prompt);
  EXPECT_EQ(stream_all(sd, gen), full.substr(head.size()));
  EXPECT_EQ(full.substr(head.size()).front(), ' ');

  // Without a context the stream is decode(gen) itself: no leading space.
  StreamDecoder plain(t);
  EXPECT_EQ(stream_all(plain, gen), dec(t, gen));

  // A context of BOS only behaves like decode(BOS + gen).
  std::vector<int> bos = {1};
  StreamDecoder after_bos(t, bos);
  std::vector<int> bos_gen = {1};
  bos_gen.insert(bos_gen.end(), gen.begin(), gen.end());
  EXPECT_EQ(stream_all(after_bos, gen), dec(t, bos_gen));

  // A character split between the context and the stream comes out whole.
  std::vector<int> ctx = {1, 15043, 243, 162};  // "Hello" + first half of 🦙
  StreamDecoder split(t, ctx);
  EXPECT_EQ(split.push(169), "");
  EXPECT_EQ(split.push(156), "🦙");
  EXPECT_EQ(split.push(3186), " world");
  EXPECT_EQ(split.flush(), "");
}

TEST(StreamDecoder, RandomSequencesKeepTheInvariant) {
  const Tokenizer& t = llama2();
  // A pool rich in what breaks naive detokenizers: byte pieces (3..258, lead and
  // continuation bytes), control tokens, <unk>, bare spaces, words, CJK, ids out
  // of range.
  std::vector<int> pool = {0,     1,     2,     13,    259,   29871, 15043, 3186,  29889,
                           30919, 31076, 8236,  450,   32000, -5,    3431,  30325, 29896};
  for (int b : {0xF0, 0x9F, 0xA6, 0x99, 0xE2, 0x82, 0xAC, 0xC3, 0xA9, 0x41, 0x80, 0xBF,
                0xED, 0xA0, 0xF4, 0x90, 0xE0, 0xC2, 0x20, 0x0A}) {
    pool.push_back(b + 3);
  }
  std::mt19937 rng(1234);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int> ids(rng() % 60);
    for (int& id : ids) {
      // Runs of plausible continuation bytes make real characters appear.
      id = (rng() % 3 == 0) ? 3 + 0x80 + static_cast<int>(rng() % 0x40)
                            : pool[rng() % pool.size()];
    }
    StreamDecoder sd(t);
    ASSERT_EQ(stream_all(sd, ids), dec(t, ids)) << "trial " << trial;

    // Primed with a context that does not end mid-character.
    std::vector<int> ctx(1 + rng() % 6);
    for (int& id : ctx) id = pool[rng() % pool.size()];
    while (!ctx.empty() && t.ends_mid_character(ctx)) ctx.pop_back();
    std::vector<int> all = ctx;
    all.insert(all.end(), ids.begin(), ids.end());
    const std::string full = dec(t, all), head = dec(t, ctx);
    ASSERT_EQ(full.compare(0, head.size(), head), 0);
    StreamDecoder primed(t, ctx);
    ASSERT_EQ(stream_all(primed, ids), full.substr(head.size())) << "primed trial " << trial;
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

TEST(StreamDecoder, LongGenerationIsIncremental) {
  const Tokenizer& t = llama2();
  std::string text;
  for (int i = 0; i < 600; ++i) {
    text += "Once upon a time, a llama 🦙 walked " + std::to_string(i) + " km.\n";
  }
  auto ids = enc(t, text, true);
  ASSERT_GT(ids.size(), 10000u);
  const auto t0 = std::chrono::steady_clock::now();
  StreamDecoder sd(t);
  const std::string streamed = stream_all(sd, ids);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(streamed, text);
  // Re-decoding the whole prefix per token takes minutes here; the window takes ms.
  EXPECT_LT(secs, 5.0) << ids.size() << " tokens took " << secs << " s";
}

}  // namespace
}  // namespace fdpp
