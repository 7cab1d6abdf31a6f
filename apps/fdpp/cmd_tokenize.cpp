// fdpp tokenize: text -> ids, or --decode ids -> text. Needs only the tokenizer.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace fdpp::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string decode;
  bool no_bos = false;
  bool pieces = false;
  bool json = false;
};

int run_tokenize(const TokenizeOptions& o) {
  if (o.text.empty() == o.decode.empty()) return fail("give text (-p) or ids to decode (--decode), exactly one");
  auto cfg = load_model_config(o.model);
  if (!cfg.ok()) return fail(cfg.status());
  auto tok = load_tokenizer(o.model, *cfg);
  if (!tok.ok()) return fail(tok.status());
  const Tokenizer& t = **tok;

  if (!o.decode.empty()) {
    auto ids = parse_id_list(o.decode);
    if (!ids.ok()) return fail(ids.status());
    if (Status valid = t.check_ids(*ids); !valid.ok()) return fail(valid);
    const std::string text = t.decode(*ids);
    if (o.json) {
      std::puts(nlohmann::json{{"ids", *ids}, {"text", text}}.dump().c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
    return 0;
  }
  auto ids = t.encode(o.text, !o.no_bos && t.add_bos_by_default());
  if (!ids.ok()) return fail(ids.status());
  if (o.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int id : *ids) pieces.push_back(t.token_text(id));
    std::puts(nlohmann::json{{"ids", *ids}, {"pieces", pieces}}.dump().c_str());
  } else if (o.pieces) {
    for (int id : *ids) std::printf("%6d  %s\n", id, t.token_text(id).c_str());
  } else {
    for (size_t i = 0; i < ids->size(); ++i) std::printf(i ? ",%d" : "%d", (*ids)[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace

void add_tokenize(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* sub = app.add_subcommand("tokenize", "text to token ids, or ids back to text");
  sub->add_option("-m,--model", o->model, "model folder (its tokenizer files)")->required();
  sub->add_option("-p,--prompt", o->text, "text to encode");
  sub->add_option("--decode", o->decode, "ids to decode: 1,2,3");
  sub->add_flag("--no-bos", o->no_bos, "do not add the BOS token");
  sub->add_flag("--pieces", o->pieces, "print one id and its piece per line");
  sub->add_flag("--json", o->json, "print JSON");
  sub->callback([o, &exit_code] { exit_code = run_tokenize(*o); });
}

}  // namespace fdpp::cli
