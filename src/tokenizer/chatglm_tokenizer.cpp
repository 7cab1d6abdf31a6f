#include "tokenizer/chatglm_tokenizer.h"

namespace fdpp {
namespace {

SentencePieceTokenizer::Options sp_options() {
  SentencePieceTokenizer::Options o;
  o.add_bos = false;  // ChatGLM's SPTokenizer.encode(bos=False): the prefix replaces BOS
  o.add_eos = false;
  return o;
}

}  // namespace

ChatGlmTokenizer::ChatGlmTokenizer(std::unique_ptr<SentencePieceTokenizer> sp)
    : sp_(std::move(sp)) {
  bos_id_ = special_id("[gMASK]");  // the first prefix token
  eos_id_ = sp_->eos_id();          // </s> (2): what generation_config's eos_token_id names
  add_bos_ = true;
  add_eos_ = false;
}

Result<std::unique_ptr<ChatGlmTokenizer>> ChatGlmTokenizer::wrap(
    Result<std::unique_ptr<SentencePieceTokenizer>> sp) {
  if (!sp.ok()) return sp.status();
  return std::unique_ptr<ChatGlmTokenizer>(new ChatGlmTokenizer(std::move(sp).value()));
}

Result<std::unique_ptr<ChatGlmTokenizer>> ChatGlmTokenizer::load(
    const std::filesystem::path& model_file) {
  return wrap(SentencePieceTokenizer::load(model_file, sp_options()));
}

Result<std::unique_ptr<ChatGlmTokenizer>> ChatGlmTokenizer::from_serialized(
    std::string_view model_proto) {
  return wrap(SentencePieceTokenizer::from_serialized(model_proto, sp_options()));
}

int ChatGlmTokenizer::special_id(std::string_view name) const {
  for (int i = 0; i < kNumSpecial; ++i)
    if (name == kSpecialNames[i]) return sp_->vocab_size() + i;
  return -1;
}

Result<std::vector<int>> ChatGlmTokenizer::encode(std::string_view text, bool add_bos) const {
  FDPP_ASSIGN_OR_RETURN(std::vector<int> ids, sp_->encode(text, /*add_bos=*/false));
  if (add_bos) {
    const std::vector<int> p = prefix();
    ids.insert(ids.begin(), p.begin(), p.end());
  }
  return ids;
}

std::vector<int> ChatGlmTokenizer::without_specials(std::span<const int> ids) const {
  const int n = sp_->vocab_size();
  std::vector<int> out;
  out.reserve(ids.size());
  for (const int id : ids)
    if (id < n || id >= n + kNumSpecial) out.push_back(id);
  return out;
}

std::string ChatGlmTokenizer::decode(std::span<const int> ids) const {
  // Removing the specials before SentencePiece decodes keeps its first-piece space
  // stripping on the first piece with text, as the prefix tokens' empty text does there.
  return sp_->decode(without_specials(ids));
}

std::string ChatGlmTokenizer::token_text(int id) const {
  const int n = sp_->vocab_size();
  if (id >= n && id < n + kNumSpecial) return kSpecialNames[id - n];
  return sp_->token_text(id);
}

bool ChatGlmTokenizer::ends_mid_character(std::span<const int> ids) const {
  return sp_->ends_mid_character(without_specials(ids));
}

}  // namespace fdpp
