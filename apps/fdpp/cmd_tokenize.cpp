// fdpp tokenize: text -> ids, or --decode ids -> text. Needs only the tokenizer.
#include <cstdio>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "fdpp/input_file.h"
#include "fdpp/tokenizer.h"

namespace fdpp::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string decode;
  std::string input_jsonl;
  std::string prompt_file;
  bool no_bos = false;
  bool pieces = false;
  bool json = false;
};

// --input-jsonl: one JSON string per line in, one {"ids", "pieces", "decoded"} per line out
// (scripts/compare/tokenizer_compare.py feeds hundreds of strings through one process this way).
int run_batch(const TokenizerHandle& t, const TokenizeOptions& o) {
  auto text = read_input_file(o.input_jsonl);
  if (!text.ok()) return fail(text.status().with_context("--input-jsonl"));
  std::istringstream in(std::move(text).value());
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) return fail(o.input_jsonl + ":" + std::to_string(n) + " is not a JSON string");
    auto ids = t.encode(j.get<std::string>(), !o.no_bos && t.add_bos_by_default());
    if (!ids.ok()) return fail(ids.status().with_context(o.input_jsonl + ":" + std::to_string(n)));
    nlohmann::json pieces = nlohmann::json::array();
    for (int id : *ids) pieces.push_back(t.piece(id));
    // Invalid UTF-8 in a piece (a byte-level token's half character) is replaced, not thrown on.
    std::puts(nlohmann::json{{"ids", *ids}, {"pieces", pieces}, {"decoded", t.decode(*ids)}}
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  .c_str());
  }
  return 0;
}

int run_tokenize(TokenizeOptions o) {
  if ((!o.text.empty()) + (!o.prompt_file.empty()) + (!o.decode.empty()) + (!o.input_jsonl.empty()) != 1)
    return fail("give text (-p or --prompt-file), ids to decode (--decode) or --input-jsonl, exactly one");
  if (!o.prompt_file.empty()) {
    auto text = read_input_file(o.prompt_file);
    if (!text.ok()) return fail(text.status().with_context("--prompt-file"));
    o.text = std::move(text).value();
    if (o.text.empty()) return fail("--prompt-file " + o.prompt_file + " is empty");
  }
  auto tok = TokenizerHandle::load(o.model);
  if (!tok.ok()) return fail(tok.status());
  const TokenizerHandle& t = *tok;
  if (!o.input_jsonl.empty()) return run_batch(t, o);

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
    for (int id : *ids) pieces.push_back(t.piece(id));
    std::puts(nlohmann::json{{"ids", *ids}, {"pieces", pieces}}.dump().c_str());
  } else if (o.pieces) {
    for (int id : *ids) std::printf("%6d  %s\n", id, t.piece(id).c_str());
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
  sub->add_option("-p,--prompt", o->text, "text to encode")->check(non_empty("text (-p)"));
  sub->add_option("--prompt-file", o->prompt_file, "encode the text of this file (- reads standard input)");
  sub->add_option("--decode", o->decode, "ids to decode: 1,2,3");
  sub->add_option("--input-jsonl", o->input_jsonl,
                  "encode every line (a JSON string) of this file (- reads standard input); prints JSON lines");
  sub->add_flag("--no-bos", o->no_bos, "do not add the BOS token");
  sub->add_flag("--pieces", o->pieces, "print one id and its piece per line");
  sub->add_flag("--json", o->json, "print JSON");
  sub->callback([o, &exit_code] { exit_code = run_tokenize(*o); });
}

}  // namespace fdpp::cli
