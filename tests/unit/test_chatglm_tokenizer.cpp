// The ChatGLM2 tokenizer on the real tokenizer.model: the special ids after the
// SentencePiece vocabulary, the [gMASK] sop prefix, and ids that THUDM's
// ChatGLMTokenizer gives (as published in chatglm.cpp's tests, which check them
// against transformers with trust_remote_code).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_util.h"
#include "model/config.h"
#include "model/model_tokenizer.h"
#include "tokenizer/chatglm_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

fs::path chatglm2_dir() { return test::models_dir() / "tokenizers" / "chatglm2"; }

ModelConfig chatglm_cfg() {
  ModelConfig c;
  c.arch = Architecture::kChatGlm;
  c.model_type = "chatglm";
  c.vocab_size = 65024;  // padded_vocab_size
  c.eos_token_ids = {2};
  return c;
}

std::unique_ptr<Tokenizer> load() {
  auto r = load_tokenizer(chatglm2_dir(), chatglm_cfg());
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::vector<int> enc(const Tokenizer& t, std::string_view s, bool prefix = true) {
  auto r = t.encode(s, prefix);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<int>{};
}

TEST(ChatGlmTokenizer, SpecialTokensFollowTheSentencePieceVocabulary) {
  auto t = load();
  ASSERT_TRUE(t);
  auto* glm = dynamic_cast<const ChatGlmTokenizer*>(t.get());
  ASSERT_NE(glm, nullptr) << "model_type chatglm did not pick the ChatGLM tokenizer";
  EXPECT_EQ(t->vocab_size(), 64794);  // 64789 SentencePiece pieces + 5
  EXPECT_EQ(glm->special_id("[MASK]"), 64789);
  EXPECT_EQ(glm->special_id("[gMASK]"), 64790);
  EXPECT_EQ(glm->special_id("[sMASK]"), 64791);
  EXPECT_EQ(glm->special_id("sop"), 64792);
  EXPECT_EQ(glm->special_id("eop"), 64793);
  EXPECT_EQ(glm->special_id("<s>"), -1);
  EXPECT_EQ(t->token_text(64790), "[gMASK]");
  EXPECT_EQ(t->token_text(64792), "sop");
  EXPECT_EQ(t->token_text(64794), Tokenizer::invalid_id_text(64794));
  EXPECT_TRUE(t->add_bos_by_default());
  EXPECT_EQ(t->eos_id(), 2);
}

TEST(ChatGlmTokenizer, PublishedIds) {
  auto t = load();
  ASSERT_TRUE(t);
  EXPECT_EQ(enc(*t, "你好"), (std::vector<int>{64790, 64792, 36474, 54591}));
  EXPECT_EQ(enc(*t, "你好", false), (std::vector<int>{36474, 54591}));
  EXPECT_EQ(enc(*t, "[Round 1]\n\n问：你好\n\n答："),
            (std::vector<int>{64790, 64792, 790, 30951, 517, 30910, 30939, 30996, 13, 13, 54761,
                              31211, 39701, 13, 13, 55437, 31211}));
  EXPECT_EQ(enc(*t, "def main():\n    print('hello world')\t# greeting"),
            (std::vector<int>{64790, 64792, 884, 1301, 9427, 13, 296, 4466, 2029, 15616, 30914,
                              993, 3387, 12, 31010, 30174}));
  const std::string chat =
      "[Round 1]\n\n问：你好\n\n答：你好👋！我是人工智能助手 ChatGLM2-6B，很高兴见到你，欢迎问我任何问题。"
      "\n\n[Round 2]\n\n问：晚上睡不着应该怎么办\n\n答：";
  EXPECT_EQ(enc(*t, chat),
            (std::vector<int>{64790, 64792, 790,   30951, 517,   30910, 30939, 30996, 13,    13,
                              54761, 31211, 39701, 13,    13,    55437, 31211, 39701, 243,   162,
                              148,   142,   31404, 33030, 34797, 42481, 22011, 10461, 30944, 30943,
                              30941, 30978, 30949, 31123, 48895, 35214, 54622, 31123, 32616, 39905,
                              31901, 31639, 31155, 13,    13,    30995, 30951, 517,   30910, 30943,
                              30996, 13,    13,    54761, 31211, 32820, 54266, 31876, 35153, 13,
                              13,    55437, 31211}));
}

TEST(ChatGlmTokenizer, DecodeDropsThePrefixAndStreams) {
  auto t = load();
  ASSERT_TRUE(t);
  const std::string text = "你好👋！我是人工智能助手 ChatGLM2-6B。";
  const auto ids = enc(*t, text);
  EXPECT_EQ(t->decode(ids), text);
  // "[gMASK]" in text is text, not the special token.
  EXPECT_EQ(t->decode(enc(*t, "[gMASK]", false)), "[gMASK]");
  EXPECT_NE(enc(*t, "[gMASK]", false), (std::vector<int>{64790}));
  StreamDecoder sd(*t);
  std::string all;
  for (int id : ids) {
    const std::string chunk = sd.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk));
    all += chunk;
  }
  all += sd.flush();
  EXPECT_EQ(all, text);
}

TEST(ChatGlmTokenizer, OtherArchitecturesKeepPlainSentencePiece) {
  ModelConfig c = chatglm_cfg();
  c.arch = Architecture::kLlama;
  auto r = load_tokenizer(chatglm2_dir(), c);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(dynamic_cast<const ChatGlmTokenizer*>(r->get()), nullptr);
  EXPECT_EQ((*r)->vocab_size(), 64789);
}

}  // namespace
}  // namespace fdpp
