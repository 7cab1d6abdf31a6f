// Chat prompts: a model's chat template rendered as transformers' apply_chat_template
// renders it (src/chat: a Jinja2 subset; ChatGLM2's Python-coded format built in).
//
//   auto t = fdpp::load_chat_template("models/Qwen3-0.6B");
//   auto prompt = fdpp::render_chat(*t, {.messages_json = R"([{"role":"user","content":"Hi"}])"});
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fdpp/status.h"

namespace fdpp {

namespace jinja { class Template; }

struct ChatTemplate {
  // Named templates ({"default", source}, {"tool_use", source}...); one unnamed template is "default".
  std::vector<std::pair<std::string, std::string>> sources;
  std::string origin;  // where it was read: "tokenizer_config.json", "--chat-template FILE", ...
  bool chatglm2 = false;  // ChatGLM2's built-in format (no Jinja)
  // tokenizer_config.json's special tokens (bos_token, eos_token, unk_token, pad_token), as
  // transformers passes its special_tokens_map to the template; tokens set to null are absent.
  std::vector<std::pair<std::string, std::string>> special_tokens;
  std::vector<std::pair<std::string, std::shared_ptr<const jinja::Template>>> compiled;  // parallel to sources
};

// Finds a model folder's template: `override_file` (raw Jinja, or JSON with "chat_template")
// when given, else chat_template.jinja, chat_template.json, tokenizer_config.json's
// chat_template, the built-in for ChatGLM2; otherwise a NotFound naming --chat-template.
// Templates are parsed here, so a syntax error is reported with its line and column.
Result<ChatTemplate> load_chat_template(const std::filesystem::path& model_dir,
                                        const std::filesystem::path& override_file = {});

struct ChatContext {
  std::string messages_json = "[]";  // a JSON array of {role, content, ...}
  std::string tools_json;            // empty: tools=None
  std::string documents_json;        // empty: documents=None
  bool add_generation_prompt = true;
  // Extra keyword variables (enable_thinking...): name -> JSON value text ("false", "\"x\"").
  std::vector<std::pair<std::string, std::string>> extra_json;
};

// The prompt text. The "tool_use" template is chosen when tools are given and it exists,
// else "default" (transformers' rule). Errors: malformed JSON, template errors (with the
// template's line and column; raise_exception's message), a template past its limits.
Result<std::string> render_chat(const ChatTemplate& t, const ChatContext& ctx);

// Token ids of a rendered prompt as apply_chat_template(tokenize=True) makes them: the text
// is tokenized without adding special tokens (the template writes the BOS itself); only
// ChatGLM2's built-in format takes the tokenizer's [gMASK] sop prefix, as its chat() does.
Result<std::vector<int>> tokenize_chat(const std::filesystem::path& model_dir, const ChatTemplate& t,
                                       const std::string& prompt);

}  // namespace fdpp
