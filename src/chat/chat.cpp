// include/fdpp/chat.h: where a model's chat template comes from, and rendering it with
// the variables transformers' apply_chat_template passes.
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/jinja/json_value.h"
#include "chat/jinja/template.h"
#include "core/regular_file.h"
#include "model/config.h"
#include "model/model_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {
namespace {

using ojson = nlohmann::ordered_json;

// Not a plain ifstream: a FIFO as tokenizer_config.json would block its open forever.
Result<std::string> read_file(const std::filesystem::path& p) { return read_regular_file(p); }

Result<ojson> read_json(const std::filesystem::path& p) {
  auto text = read_file(p);
  if (!text.ok()) return text.status();
  ojson j = ojson::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(p.string() + " is not valid JSON");
  return j;
}

// `chat_template` as tokenizer_config.json / chat_template.json hold it: a string, or a
// list of {name, template}.
Status take_templates(const ojson& value, const std::string& where, ChatTemplate& t) {
  if (value.is_string()) {
    t.sources.emplace_back("default", value.get<std::string>());
    return Status::Ok();
  }
  if (value.is_array()) {
    for (const auto& e : value) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
          !e["template"].is_string())
        return Corrupt(where + ": chat_template list entries must be {\"name\", \"template\"} strings");
      t.sources.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
    }
    if (!t.sources.empty()) return Status::Ok();
  }
  return Corrupt(where + ": chat_template must be a string or a list of {name, template}");
}

Result<jinja::Value> parse_value(const std::string& json_text, const std::string& what) {
  ojson j = ojson::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(what + " is not valid JSON");
  return jinja::from_json(j);
}

// tokenizer_config.json's token fields are a string or an AddedToken {"content": ...}.
void take_special_tokens(const ojson& cfg, ChatTemplate& t) {
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!cfg.contains(key)) continue;
    const ojson& v = cfg[key];
    if (v.is_string()) t.special_tokens.emplace_back(key, v.get<std::string>());
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
      t.special_tokens.emplace_back(key, v["content"].get<std::string>());
  }
}

}  // namespace

Result<ChatTemplate> load_chat_template(const std::filesystem::path& dir, const std::filesystem::path& override_file) {
  namespace fs = std::filesystem;
  ChatTemplate t;
  const fs::path config = dir / "tokenizer_config.json";
  ojson cfg;
  if (fs::exists(config)) {
    auto j = read_json(config);
    if (!j.ok()) return j.status();
    cfg = std::move(*j);
    if (cfg.is_object()) take_special_tokens(cfg, t);
  }
  auto from_json_file = [&](const fs::path& p) -> Status {
    auto j = read_json(p);
    if (!j.ok()) return j.status();
    if (!j->is_object() || !j->contains("chat_template")) return Corrupt(p.string() + " has no \"chat_template\"");
    return take_templates((*j)["chat_template"], p.string(), t);
  };
  if (!override_file.empty()) {
    t.origin = "--chat-template " + override_file.string();
    if (override_file.extension() == ".json") {
      if (Status s = from_json_file(override_file); !s.ok()) return s;
    } else {
      auto text = read_file(override_file);
      if (!text.ok()) return text.status();
      t.sources.emplace_back("default", std::move(*text));
    }
  } else if (fs::exists(dir / "chat_template.jinja")) {
    t.origin = (dir / "chat_template.jinja").string();
    auto text = read_file(dir / "chat_template.jinja");
    if (!text.ok()) return text.status();
    t.sources.emplace_back("default", std::move(*text));
  } else if (fs::exists(dir / "chat_template.json")) {
    t.origin = (dir / "chat_template.json").string();
    if (Status s = from_json_file(dir / "chat_template.json"); !s.ok()) return s;
  } else if (cfg.is_object() && cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    t.origin = config.string();
    if (Status s = take_templates(cfg["chat_template"], config.string(), t); !s.ok()) return s;
  } else {
    // ChatGLM2 writes its prompt format in Python (build_prompt), not in a template. The
    // tokenizer folder names its class; a model folder's config.json its model_type.
    const bool glm_tokenizer = cfg.is_object() && cfg.value("tokenizer_class", "") == "ChatGLMTokenizer";
    auto mc = glm_tokenizer ? Result<ModelConfig>(NotFound("")) : load_model_config(dir);
    if (glm_tokenizer || (mc.ok() && mc->model_type == "chatglm")) {
      t.origin = "built-in ChatGLM2 format";
      t.chatglm2 = true;
      return t;
    }
    return NotFound(dir.string() + " has no chat template (no chat_template in tokenizer_config.json, "
                    "no chat_template.jinja or chat_template.json): give one with --chat-template FILE");
  }
  for (const auto& [name, source] : t.sources) {
    auto parsed = jinja::Template::parse(source);
    if (!parsed.ok()) return parsed.status().with_context(t.origin + " (template '" + name + "')");
    t.compiled.emplace_back(name, std::make_shared<const jinja::Template>(std::move(*parsed)));
  }
  return t;
}

Result<std::string> render_chat(const ChatTemplate& t, const ChatContext& ctx) {
  auto messages = parse_value(ctx.messages_json, "the messages");
  if (!messages.ok()) return messages.status();
  if (!messages->is_list()) return InvalidArgument("the messages must be a JSON array");
  if (t.chatglm2) {
    return render_chatglm2(ojson::parse(ctx.messages_json), ctx.add_generation_prompt);
  }
  const bool has_tools = !ctx.tools_json.empty();
  const jinja::Template* chosen = nullptr;
  for (const auto& [name, tpl] : t.compiled)
    if (has_tools && name == "tool_use") chosen = tpl.get();
  for (const auto& [name, tpl] : t.compiled)
    if (!chosen && name == "default") chosen = tpl.get();
  if (!chosen && t.compiled.size() == 1) chosen = t.compiled[0].second.get();
  if (!chosen) return NotFound(t.origin + " has no template named 'default'");

  // transformers: {**special_tokens_map, **kwargs}, then messages, tools, documents and
  // add_generation_prompt as the render call's own keywords.
  jinja::Dict vars;
  for (const auto& [k, v] : t.special_tokens) vars.set(jinja::Value::string(k), jinja::Value::string(v));
  for (const auto& [k, text] : ctx.extra_json) {
    auto v = parse_value(text, "the variable " + k);
    if (!v.ok()) return v.status();
    vars.set(jinja::Value::string(k), std::move(*v));
  }
  vars.set(jinja::Value::string("messages"), std::move(*messages));
  jinja::Value tools = jinja::Value::none(), documents = jinja::Value::none();
  if (has_tools) {
    auto v = parse_value(ctx.tools_json, "the tools");
    if (!v.ok()) return v.status();
    tools = std::move(*v);
  }
  if (!ctx.documents_json.empty()) {
    auto v = parse_value(ctx.documents_json, "the documents");
    if (!v.ok()) return v.status();
    documents = std::move(*v);
  }
  vars.set(jinja::Value::string("tools"), tools);
  vars.set(jinja::Value::string("documents"), documents);
  vars.set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(ctx.add_generation_prompt));
  auto out = chosen->render(vars);
  if (!out.ok()) return out.status().with_context(t.origin);
  return out;
}

Result<std::vector<int>> tokenize_chat(const std::filesystem::path& model_dir, const ChatTemplate& t,
                                       const std::string& prompt) {
  // A tokenizer-only folder has no config.json: its tokenizer files alone decide, with no
  // vocabulary bound (vocab_size 0 skips load_tokenizer's check against the model).
  ModelConfig cfg;
  if (std::filesystem::exists(model_dir / "config.json")) {
    auto c = load_model_config(model_dir);
    if (!c.ok()) return c.status();
    cfg = std::move(*c);
  } else if (t.chatglm2) {
    cfg.arch = Architecture::kChatGlm;
    cfg.model_type = "chatglm";
  }
  auto tok = load_tokenizer(model_dir, cfg);
  if (!tok.ok()) return tok.status();
  const Tokenizer& tk = **tok;
  if (t.chatglm2) return tk.encode(prompt, /*add_bos=*/true);
  // transformers splits the text at its special tokens' strings before tokenizing, so the
  // "<s>" a Llama-2 template writes is the BOS id, not the characters < s >. fdpp's
  // tokenizers that do not match such text themselves get the same split here.
  std::vector<std::pair<std::string, int>> specials;
  for (int id : {tk.bos_id(), tk.eos_id()}) {
    if (id < 0) continue;
    std::string text = tk.token_text(id);
    if (text.empty()) continue;
    auto as_text = tk.encode(text, false);
    if (as_text.ok() && as_text->size() == 1 && (*as_text)[0] == id) continue;  // already matched
    specials.emplace_back(text, id);
  }
  std::vector<int> ids;
  size_t pos = 0;
  while (pos <= prompt.size()) {
    size_t best = std::string::npos;
    const std::pair<std::string, int>* hit = nullptr;
    for (const auto& sp : specials) {
      size_t at = prompt.find(sp.first, pos);
      if (at < best) {
        best = at;
        hit = &sp;
      }
    }
    std::string_view segment = std::string_view(prompt).substr(pos, hit ? best - pos : std::string::npos);
    if (!segment.empty()) {
      auto part = tk.encode(segment, false);
      if (!part.ok()) return part.status();
      ids.insert(ids.end(), part->begin(), part->end());
    }
    if (!hit) break;
    ids.push_back(hit->second);
    pos = best + hit->first.size();
  }
  return ids;
}

}  // namespace fdpp
