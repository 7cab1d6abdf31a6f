// fdpp/tokenizer.h over the internal Tokenizer (tokenizer/tokenizer.h).
#include "fdpp/tokenizer.h"

#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

Result<TokenizerHandle> TokenizerHandle::load(const std::filesystem::path& model_dir) {
  auto cfg = load_model_config(model_dir);
  if (!cfg.ok()) return cfg.status();
  auto tok = load_tokenizer(model_dir, *cfg);
  if (!tok.ok()) return tok.status();
  return TokenizerHandle(std::shared_ptr<const Tokenizer>(std::move(tok).value()));
}

Result<std::vector<int>> TokenizerHandle::encode(std::string_view text, bool add_bos) const {
  return impl_->encode(text, add_bos);
}

Result<std::vector<int>> TokenizerHandle::encode(std::string_view text) const {
  return impl_->encode(text, impl_->add_bos_by_default());
}

std::string TokenizerHandle::decode(std::span<const int> ids) const { return impl_->decode(ids); }
std::string TokenizerHandle::piece(int id) const { return impl_->token_text(id); }
Status TokenizerHandle::check_ids(std::span<const int> ids) const { return impl_->check_ids(ids); }
int TokenizerHandle::vocab_size() const { return impl_->vocab_size(); }
int TokenizerHandle::bos_id() const { return impl_->bos_id(); }
int TokenizerHandle::eos_id() const { return impl_->eos_id(); }
bool TokenizerHandle::add_bos_by_default() const { return impl_->add_bos_by_default(); }

std::optional<TokenizerHandle> Engine::tokenizer_handle() const {
  const Tokenizer* t = tokenizer();
  if (t == nullptr) return std::nullopt;
  // Aliasing an empty owner: the handle points at the engine's tokenizer without owning it.
  return TokenizerHandle(std::shared_ptr<const Tokenizer>(std::shared_ptr<const void>(), t));
}

}  // namespace fdpp
