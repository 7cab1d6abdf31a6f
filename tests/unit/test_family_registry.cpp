// The model-family registry: every model_type resolves to its family, the registry's
// functions are what parsing, loading, GEMM tuning and the tokenizer see, and an unknown
// model_type gets the error it always got.
#include <gtest/gtest.h>

#include <string>

#include "model/config.h"
#include "model/families/registry.h"
#include "model/gemm_shapes.h"
#include "model/model_tokenizer.h"
#include "model/weight_specs.h"

namespace fdpp {
namespace {

// The smallest config.json of each family the parsers accept.
std::string minimal(const std::string& model_type) {
  if (model_type == "llama")
    return R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 512,
      "bos_token_id": 1, "eos_token_id": 2})";
  if (model_type == "opt")
    return R"({"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 512, "bos_token_id": 2, "eos_token_id": 2})";
  return R"({"model_type": "chatglm", "hidden_size": 64, "ffn_hidden_size": 128,
    "num_layers": 2, "num_attention_heads": 4, "kv_channels": 16, "padded_vocab_size": 512,
    "multi_query_attention": true, "multi_query_group_num": 2, "eos_token_id": 2})";
}

TEST(FamilyRegistry, EveryModelTypeResolves) {
  const std::pair<const char*, Architecture> expected[] = {
      {"llama", Architecture::kLlama}, {"opt", Architecture::kOpt}, {"chatglm", Architecture::kChatGlm}};
  ASSERT_EQ(model_families().size(), std::size(expected));
  for (const auto& [type, arch] : expected) {
    const ModelFamily* f = find_model_family(type);
    ASSERT_NE(f, nullptr) << type;
    EXPECT_EQ(f->arch, arch) << type;
    EXPECT_EQ(&model_family(arch), f) << type;
    EXPECT_STREQ(architecture_name(arch), type);
    auto cfg = parse_model_config(minimal(type));
    ASSERT_TRUE(cfg.ok()) << type << ": " << cfg.status().to_string();
    EXPECT_EQ(cfg->arch, arch);
    EXPECT_EQ(cfg->model_type, type);
  }
  EXPECT_EQ(find_model_family("gpt2"), nullptr);
  EXPECT_EQ(find_model_family("Llama"), nullptr);  // model_type is matched exactly
  EXPECT_EQ(find_model_family(""), nullptr);
}

TEST(FamilyRegistry, UnknownModelTypeGetsTodaysError) {
  auto r = parse_model_config(R"({"model_type": "gpt2", "n_embd": 768})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(),
            "model_type 'gpt2' is not supported (fdpp supports: llama, opt, chatglm)");
}

TEST(FamilyRegistry, SharedEntryPointsAskTheFamily) {
  for (const ModelFamily& f : model_families()) {
    auto cfg = parse_model_config(minimal(f.model_type));
    ASSERT_TRUE(cfg.ok()) << f.model_type;
    const auto specs = weight_specs(*cfg), own = f.weight_specs(*cfg);
    ASSERT_EQ(specs.size(), own.size()) << f.model_type;
    for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(specs[i].name, own[i].name);
    const auto shapes = gemm_shapes(*cfg), own_shapes = f.gemm_shapes(*cfg);
    ASSERT_EQ(shapes.size(), own_shapes.size()) << f.model_type;
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_EQ(shapes[i].name, own_shapes[i].name);
      EXPECT_EQ(shapes[i].prologue, own_shapes[i].prologue);
    }
  }
  // ChatGLM2 runs Llama's forward, so its GEMMs take Llama's prologues; OPT's take none.
  EXPECT_EQ(find_model_family("chatglm")->make_model, find_model_family("llama")->make_model);
  auto glm = parse_model_config(minimal("chatglm"));
  auto opt = parse_model_config(minimal("opt"));
  ASSERT_TRUE(glm.ok() && opt.ok());
  for (const GemmShape& s : gemm_shapes(*opt)) EXPECT_EQ(s.prologue, LinearPrologue::Kind::kNone) << s.name;
  EXPECT_EQ(gemm_shapes(*glm)[0].prologue, LinearPrologue::Kind::kRmsNorm);
}

TEST(FamilyRegistry, TokenizerHintsFromTheConfig) {
  auto llama = parse_model_config(minimal("llama"));
  auto opt = parse_model_config(minimal("opt"));
  auto glm = parse_model_config(minimal("chatglm"));
  ASSERT_TRUE(llama.ok() && opt.ok() && glm.ok());

  const TokenizerHints l = tokenizer_hints(*llama);
  EXPECT_EQ(l.sentencepiece, TokenizerHints::SentencePiece::kPlain);
  EXPECT_TRUE(l.sentencepiece_add_bos);  // LlamaTokenizer
  EXPECT_FALSE(l.bpe_add_bos);           // GPT-2
  EXPECT_EQ(l.fallback_bos_id, 1);
  EXPECT_EQ(l.fallback_eos_id, 2);
  EXPECT_EQ(l.vocab_size, 512);

  const TokenizerHints o = tokenizer_hints(*opt);
  EXPECT_EQ(o.sentencepiece, TokenizerHints::SentencePiece::kPlain);
  EXPECT_TRUE(o.bpe_add_bos);  // OPT's </s> in front of every prompt
  EXPECT_EQ(o.fallback_bos_id, 2);

  const TokenizerHints g = tokenizer_hints(*glm);
  EXPECT_EQ(g.sentencepiece, TokenizerHints::SentencePiece::kChatGlm);
  EXPECT_EQ(g.fallback_bos_id, -1);  // the config names none
  EXPECT_EQ(g.fallback_eos_id, 2);

  // A hand-built config (no model_type) gets its architecture's hints.
  ModelConfig bare;
  bare.arch = Architecture::kOpt;
  EXPECT_TRUE(tokenizer_hints(bare).bpe_add_bos);
  EXPECT_EQ(tokenizer_hints(bare).fallback_eos_id, -1);
}

}  // namespace
}  // namespace fdpp
