// fdpp template: renders a model's chat template over a conversation, as transformers'
// apply_chat_template does, and prints the prompt (or, with --ids, its token ids).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "fdpp/chat.h"
#include "fdpp/input_file.h"

namespace fdpp::cli {
namespace {

struct TemplateOptions {
  std::string model;
  std::string messages;
  std::string tools;
  std::string chat_template;
  std::vector<std::string> vars;
  bool no_generation_prompt = false;
  bool ids = false;
};

Result<std::string> read_text(const std::string& path) { return read_input_file(path); }

// --var k=v: v is read as JSON when it parses (true, 3, "x", [..]), else as a string, so
// `--var enable_thinking=false` is the boolean and `--var name=Ann` the text.
std::string var_json(const std::string& v) {
  bool is_json = v == "true" || v == "false" || v == "null" || (!v.empty() && (v[0] == '"' || v[0] == '[' || v[0] == '{' ||
                                                                              v[0] == '-' || (v[0] >= '0' && v[0] <= '9')));
  if (is_json) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

int run_template(const TemplateOptions& o) {
  auto t = load_chat_template(o.model, o.chat_template);
  if (!t.ok()) return fail(t.status());
  ChatContext ctx;
  auto messages = read_text(o.messages);
  if (!messages.ok()) return fail(messages.status());
  ctx.messages_json = std::move(*messages);
  if (!o.tools.empty()) {
    auto tools = read_text(o.tools);
    if (!tools.ok()) return fail(tools.status());
    ctx.tools_json = std::move(*tools);
  }
  ctx.add_generation_prompt = !o.no_generation_prompt;
  for (const std::string& kv : o.vars) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--var wants NAME=VALUE, got '" + kv + "'");
    ctx.extra_json.emplace_back(kv.substr(0, eq), var_json(kv.substr(eq + 1)));
  }
  auto prompt = render_chat(*t, ctx);
  if (!prompt.ok()) return fail(prompt.status());
  if (!o.ids) {
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
    return 0;
  }
  auto ids = tokenize_chat(o.model, *t, *prompt);
  if (!ids.ok()) return fail(ids.status());
  for (size_t i = 0; i < ids->size(); ++i) std::printf(i ? ",%d" : "%d", (*ids)[i]);
  std::printf("\n");
  return 0;
}

}  // namespace

void add_template(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TemplateOptions>();
  CLI::App* sub = app.add_subcommand("template", "render the model's chat template over a conversation");
  sub->add_option("-m,--model", o->model, "model folder (its tokenizer_config.json / chat_template.jinja)")->required();
  sub->add_option("--messages", o->messages, "a JSON file: [{\"role\", \"content\"}, ...]")->required();
  sub->add_option("--tools", o->tools, "a JSON file: the tools (function schemas)");
  sub->add_flag("--no-generation-prompt", o->no_generation_prompt, "do not open an assistant turn at the end");
  sub->add_option("--var", o->vars, "an extra template variable NAME=VALUE (VALUE as JSON if it parses)");
  sub->add_option("--chat-template", o->chat_template, "use this template file instead (Jinja, or JSON with chat_template)");
  sub->add_flag("--ids", o->ids, "print the token ids (tokenized without adding special tokens)");
  sub->callback([o, &exit_code] { exit_code = run_template(*o); });
}

}  // namespace fdpp::cli
