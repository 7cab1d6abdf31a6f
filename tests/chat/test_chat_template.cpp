// Where a chat template comes from (include/fdpp/chat.h: load_chat_template) and the
// variables render_chat passes: precedence of the sources, named templates, special
// tokens, ChatGLM2's built-in format, the error that names --chat-template.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fdpp/chat.h"
#include "golden.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("fdpp_chat_tpl_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name, std::ios::binary) << text; }
};

const char* kOneUser = R"([{"role": "user", "content": "Hi"}])";

std::string render(const fdpp::ChatTemplate& t, const fdpp::ChatContext& ctx) {
  auto r = fdpp::render_chat(t, ctx);
  return r.ok() ? r.value() : "ERROR " + r.status().message();
}

}  // namespace

TEST(ChatTemplate, NoTemplateNamesTheOverride) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  auto t = fdpp::load_chat_template(d.path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), fdpp::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("--chat-template"), std::string::npos) << t.status().message();
}

TEST(ChatTemplate, SourcesInOrderOfPrecedence) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "config {{ bos_token }}", "bos_token": "<s>", "eos_token": {"content": "</s>"}, "unk_token": null})");
  fdpp::ChatContext ctx{.messages_json = kOneUser};
  auto t = fdpp::load_chat_template(d.path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(render(*t, ctx), "config <s>");
  d.write("chat_template.json", R"({"chat_template": "json {{ eos_token }}{{ unk_token is defined }}"})");
  t = fdpp::load_chat_template(d.path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(render(*t, ctx), "json </s>False");
  d.write("chat_template.jinja", "jinja {{ messages[0].content }}\n");
  t = fdpp::load_chat_template(d.path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(render(*t, ctx), "jinja Hi");  // and the trailing newline is dropped, as Jinja2 does
  d.write("override.jinja", "override {{ add_generation_prompt }}");
  t = fdpp::load_chat_template(d.path, d.path / "override.jinja");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(render(*t, ctx), "override True");
  EXPECT_NE(t->origin.find("--chat-template"), std::string::npos);
}

TEST(ChatTemplate, NamedTemplatesPickToolUseWithTools) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "default", "template": "plain"}, {"name": "tool_use", "template": "tools: {{ tools | length }}"}]})");
  auto t = fdpp::load_chat_template(d.path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(render(*t, {.messages_json = kOneUser}), "plain");
  EXPECT_EQ(render(*t, {.messages_json = kOneUser, .tools_json = "[{\"a\": 1}, {\"b\": 2}]"}), "tools: 2");
}

TEST(ChatTemplate, VariablesAsTransformersPassesThem) {
  TempDir d;
  d.write("t.jinja",
          "{{ tools }} {{ documents }} {{ add_generation_prompt }} {{ enable_thinking }} {{ name }} {{ messages | length }}");
  auto t = fdpp::load_chat_template(d.path, d.path / "t.jinja");
  ASSERT_TRUE(t.ok()) << t.status().message();
  fdpp::ChatContext ctx{.messages_json = kOneUser, .add_generation_prompt = false,
                        .extra_json = {{"enable_thinking", "false"}, {"name", "\"Ann\""}}};
  EXPECT_EQ(render(*t, ctx), "None None False False Ann 1");
  ctx.messages_json = "{not json";
  EXPECT_NE(render(*t, ctx).find("not valid JSON"), std::string::npos);
}

TEST(ChatTemplate, SyntaxErrorsAtLoadNameTheFileAndPosition) {
  TempDir d;
  d.write("bad.jinja", "ok\n{% if x %}never closed");
  auto t = fdpp::load_chat_template(d.path, d.path / "bad.jinja");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bad.jinja"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().message();
}

TEST(ChatTemplate, ChatGlm2BuiltInFormat) {
  const fs::path dir = fs::path(FDPP_MODELS_DIR) / "tokenizers/chatglm2";
  ASSERT_TRUE(fs::exists(dir / "tokenizer_config.json")) << dir << " is missing (FDPP_MODELS_DIR)";
  auto t = fdpp::load_chat_template(dir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->chatglm2);
  const char* conv = R"([{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"},
                         {"role": "user", "content": "Q2"}])";
  EXPECT_EQ(render(*t, {.messages_json = conv}), "[Round 1]\n\n问：你好\n\n答：你好！\n\n[Round 2]\n\n问：Q2\n\n答：");
  EXPECT_NE(render(*t, {.messages_json = R"([{"role": "system", "content": "x"}])"}).find("no 'system' role"),
            std::string::npos);
  // Its chat() tokenizes with the special tokens: [gMASK] sop in front.
  auto ids = fdpp::tokenize_chat(dir, *t, "[Round 1]\n\n问：你好\n\n答：");
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  ASSERT_GE(ids->size(), 3u);
  EXPECT_EQ((*ids)[0], 64790);  // [gMASK]
  EXPECT_EQ((*ids)[1], 64792);  // sop
}

TEST(ChatTemplate, TokenizeChatReadsTheTemplatesBosTextAsTheBosId) {
  const fs::path dir = fs::path(FDPP_MODELS_DIR) / "stories260K";
  ASSERT_TRUE(fs::exists(dir / "tokenizer.model")) << dir << " is missing (FDPP_MODELS_DIR)";
  auto t = fdpp::load_chat_template(dir, fdpp::test::kChatDir / "templates/llama2-chat.jinja");
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto prompt = fdpp::render_chat(*t, {.messages_json = kOneUser, .extra_json = {{"bos_token", "\"<s>\""}, {"eos_token", "\"</s>\""}}});
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  ASSERT_EQ(prompt.value(), "<s>[INST] Hi [/INST]");
  auto ids = fdpp::tokenize_chat(dir, *t, *prompt);
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  ASSERT_FALSE(ids->empty());
  EXPECT_EQ((*ids)[0], 1);  // the BOS id once, from the template's text; none added on top
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 1), 1);
}
