// load_tokenizer: picks the tokenizer of a model folder by its files and the family's hints,
// and reads the Hugging Face side files (tokenizer_config.json, special_tokens_map.json)
// for BOS/EOS and special tokens.
#include <optional>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/regular_file.h"
#include "tokenizer/chatglm_tokenizer.h"
#include "tokenizer/gpt2_bpe_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace fdpp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// What tokenizer_config.json and special_tokens_map.json say about special tokens.
struct SpecialTokenFiles {
  bool present = false;  // at least one of the files exists
  std::optional<bool> add_bos, add_eos;
  std::string bos, eos;
  std::vector<std::string> specials;  // every special token either file names
};

// A token written as a string or as an AddedToken object {"content": "<s>", ...}.
Status read_token_piece(const json& j, const char* key, const std::string& file, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (it->is_string()) {
    *out = it->get<std::string>();
    return Status::Ok();
  }
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) {
      *out = c->get<std::string>();
      return Status::Ok();
    }
  }
  return InvalidArgument(file + ": field '" + key +
                         "' must be a string or an object with a string 'content'");
}

Status read_flag(const json& j, const char* key, const std::string& file,
                 std::optional<bool>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean())
    return InvalidArgument(file + ": field '" + key + "' must be true or false, got " + it->dump());
  *out = it->get<bool>();
  return Status::Ok();
}

Result<json> read_json(const fs::path& p) {
  FDPP_ASSIGN_OR_RETURN(const std::string text, read_regular_file(p));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return InvalidArgument(p.string() + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) return InvalidArgument(p.string() + " must be a JSON object");
  return j;
}

// Reads the special tokens of one file into `out` (tokenizer_config.json is read after
// special_tokens_map.json, so its BOS/EOS win where both name one).
Status read_special_file(const fs::path& p, SpecialTokenFiles* out) {
  FDPP_ASSIGN_OR_RETURN(json j, read_json(p));
  const std::string file = p.string();
  out->present = true;
  FDPP_RETURN_IF_ERROR(read_flag(j, "add_bos_token", file, &out->add_bos));
  FDPP_RETURN_IF_ERROR(read_flag(j, "add_eos_token", file, &out->add_eos));
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "mask_token",
                          "sep_token", "cls_token"}) {
    std::string piece;
    FDPP_RETURN_IF_ERROR(read_token_piece(j, key, file, &piece));
    if (piece.empty()) continue;
    out->specials.push_back(piece);
    if (std::string(key) == "bos_token") out->bos = piece;
    if (std::string(key) == "eos_token") out->eos = piece;
  }
  if (auto it = j.find("additional_special_tokens"); it != j.end() && it->is_array())
    for (const json& t : *it) {
      if (t.is_string()) out->specials.push_back(t.get<std::string>());
      if (t.is_object() && t.contains("content") && t["content"].is_string())
        out->specials.push_back(t["content"].get<std::string>());
    }
  // transformers >= 4.34 lists every added token by id, with its "special" flag.
  if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object())
    for (const auto& [id, t] : it->items())
      if (t.is_object() && t.value("special", false) && t.contains("content") &&
          t["content"].is_string())
        out->specials.push_back(t["content"].get<std::string>());
  return Status::Ok();
}

Result<SpecialTokenFiles> read_special_files(const fs::path& dir) {
  SpecialTokenFiles f;
  std::error_code ec;
  for (const char* name : {"special_tokens_map.json", "tokenizer_config.json"})
    if (fs::exists(dir / name, ec)) FDPP_RETURN_IF_ERROR(read_special_file(dir / name, &f));
  return f;
}

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const fs::path& model_file,
                                                      const SpecialTokenFiles& files,
                                                      const TokenizerHints& hints) {
  if (hints.sentencepiece == TokenizerHints::SentencePiece::kChatGlm) {
    FDPP_ASSIGN_OR_RETURN(auto tok, ChatGlmTokenizer::load(model_file));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  SentencePieceTokenizer::Options opts;
  opts.add_bos = files.add_bos.value_or(hints.sentencepiece_add_bos);
  opts.add_eos = files.add_eos.value_or(false);
  opts.bos_piece = files.bos;
  opts.eos_piece = files.eos;
  opts.fallback_bos_id = hints.fallback_bos_id;
  opts.fallback_eos_id = hints.fallback_eos_id;
  FDPP_ASSIGN_OR_RETURN(auto tok, SentencePieceTokenizer::load(model_file, opts));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Result<std::unique_ptr<Tokenizer>> load_gpt2_bpe(const fs::path& dir,
                                                 const SpecialTokenFiles& files,
                                                 const TokenizerHints& hints) {
  Gpt2BpeTokenizer::Options opts;
  opts.add_bos = files.add_bos.value_or(hints.bpe_add_bos);
  opts.bos_piece = files.bos;
  opts.eos_piece = files.eos;
  opts.fallback_bos_id = hints.fallback_bos_id;
  opts.fallback_eos_id = hints.fallback_eos_id;
  // Without the side files, the special tokens GPT-2 and OPT folders declare.
  opts.special_pieces =
      files.present ? files.specials : std::vector<std::string>{"<|endoftext|>", "<s>",   "<pad>",
                                                                "</s>",          "<unk>", "<mask>"};
  FDPP_ASSIGN_OR_RETURN(auto tok,
                        Gpt2BpeTokenizer::load(dir / "vocab.json", dir / "merges.txt", opts));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const fs::path& model_dir,
                                                  const TokenizerHints& hints) {
  std::error_code ec;
  const fs::path sp_file = model_dir / "tokenizer.model";
  const bool has_sp = fs::is_regular_file(sp_file, ec);
  const bool has_bpe = fs::is_regular_file(model_dir / "vocab.json", ec) &&
                       fs::is_regular_file(model_dir / "merges.txt", ec);
  if (!has_sp && !has_bpe) {
    std::string why =
        "no tokenizer.model (SentencePiece) or vocab.json + merges.txt (GPT-2 BPE) in " +
        model_dir.string();
    if (fs::exists(model_dir / "tokenizer.json", ec))
      why += " (it has a tokenizer.json, which fdpp does not read yet)";
    return NotFound(why + "; give the prompt as token ids with --prompt-ids");
  }
  FDPP_ASSIGN_OR_RETURN(const SpecialTokenFiles files, read_special_files(model_dir));
  FDPP_ASSIGN_OR_RETURN(
      std::unique_ptr<Tokenizer> tok,
      has_sp ? load_sentencepiece(sp_file, files, hints) : load_gpt2_bpe(model_dir, files, hints));
  if (hints.vocab_size > 0 && tok->vocab_size() > hints.vocab_size)
    return InvalidArgument(
        model_dir.string() + ": the tokenizer has " + std::to_string(tok->vocab_size()) +
        " tokens but the model's vocab_size is " + std::to_string(hints.vocab_size) +
        ": its ids would index past the embedding");
  return tok;
}

}  // namespace fdpp
