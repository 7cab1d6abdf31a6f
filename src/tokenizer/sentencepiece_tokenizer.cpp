#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>


#include "core/text_file.h"
#include "tokenizer/utf8.h"

namespace fdpp {

namespace {

// "<0xAB>" -> 0xAB; -1 for anything else.
int parse_byte_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = piece[k];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return -1;
    }
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer()
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::from_serialized(
    std::string_view model_proto, const Options& opts) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  if (model_proto.empty()) return Corrupt("the SentencePiece model is empty");
  const auto st = t->sp_->LoadFromSerializedProto(model_proto);
  if (!st.ok()) {
    // The usual failure is the protobuf parse, whose message is only a source line.
    const std::string msg = st.ToString();
    if (msg.find("ParseFromArray") != std::string::npos) {
      return Corrupt("not a SentencePiece model (the protobuf does not parse)");
    }
    return Corrupt("not a valid SentencePiece model: " + msg);
  }
  const int n = t->sp_->GetPieceSize();
  if (n <= 0) return Corrupt("the SentencePiece model has no pieces");
  t->vocab_size_ = n;

  t->byte_of_.assign(n, -1);
  for (int id = 0; id < n; ++id) {
    if (t->sp_->IsByte(id)) {
      t->byte_of_[id] = static_cast<int16_t>(parse_byte_piece(t->sp_->IdToPiece(id)));
    }
  }

  auto pick = [&](const std::string& piece, int model_id, int fallback) {
    if (!piece.empty()) {
      if (const int id = t->piece_to_id(piece); id >= 0) return id;
    }
    if (model_id >= 0 && model_id < n) return model_id;
    if (fallback >= 0 && fallback < n) return fallback;
    return -1;
  };
  t->bos_id_ = pick(opts.bos_piece, t->sp_->bos_id(), opts.fallback_bos_id);
  t->eos_id_ = pick(opts.eos_piece, t->sp_->eos_id(), opts.fallback_eos_id);
  t->add_bos_ = opts.add_bos && t->bos_id_ >= 0;
  t->add_eos_ = opts.add_eos && t->eos_id_ >= 0;

  // The anchor only serves if <unk>'s text does not depend on its position; a
  // model where it does would decode continuations after an invalid id as a fresh
  // start (a dropped leading space at worst).
  const int unk = t->sp_->unk_id();
  if (unk >= 0 && unk < n) {
    const std::string one = t->sp_->DecodeIds({unk});
    if (!one.empty() && t->sp_->DecodeIds({unk, unk}) == one + one) {
      t->anchor_id_ = unk;
      t->anchor_text_ = one;
    }
  }
  return t;
}

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::load(
    const std::filesystem::path& file, const Options& opts) {
  FDPP_ASSIGN_OR_RETURN(const std::string bytes, read_text_file(file));
  auto t = from_serialized(bytes, opts);
  if (!t.ok()) return t.status().with_context(file.string());
  return t;
}

int SentencePieceTokenizer::piece_to_id(std::string_view piece) const {
  const int id = sp_->PieceToId(piece);
  // PieceToId answers <unk>'s id for a piece it does not know.
  if (id < 0 || id >= vocab_size_) return -1;
  if (id == sp_->unk_id() && sp_->IdToPiece(id) != piece) return -1;
  return id;
}

Result<std::vector<int>> SentencePieceTokenizer::encode(std::string_view text,
                                                        bool add_bos) const {
  // SentencePiece would quietly map stray bytes to <unk> or byte pieces; a prompt
  // in the wrong encoding is better reported than silently garbled.
  if (const size_t bad = utf8_error_offset(text); bad != text.size()) {
    return InvalidArgument("text to encode is not valid UTF-8 (invalid byte at offset " +
                           std::to_string(bad) + " of " + std::to_string(text.size()) + ")");
  }
  std::vector<int> ids;
  const auto st = sp_->Encode(text, &ids);
  if (!st.ok()) return Internal(std::string("SentencePiece encode failed: ") + st.ToString());
  if (add_bos && bos_id_ >= 0) ids.insert(ids.begin(), bos_id_);
  return ids;
}

std::string SentencePieceTokenizer::decode_valid(std::span<const int> ids, bool first) const {
  const bool anchored = !first && anchor_id_ >= 0;
  std::vector<int> v;
  v.reserve(ids.size() + 1);
  if (anchored) v.push_back(anchor_id_);
  v.insert(v.end(), ids.begin(), ids.end());
  std::string out;
  const auto st = sp_->Decode(v, &out);
  // Unreachable with ids checked against the vocabulary; still no exception or abort.
  if (!st.ok()) return "<decode error: " + st.ToString() + ">";
  if (anchored && out.compare(0, anchor_text_.size(), anchor_text_) == 0) {
    out.erase(0, anchor_text_.size());
  }
  return out;
}

std::string SentencePieceTokenizer::decode(std::span<const int> ids) const {
  std::string out;
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i;
    while (j < ids.size() && is_valid_id(ids[j])) ++j;
    if (j > i) out += decode_valid(ids.subspan(i, j - i), /*first=*/i == 0);
    if (j < ids.size()) out += invalid_id_text(ids[j++]);
    i = j;
  }
  return out;
}

std::string SentencePieceTokenizer::token_text(int id) const {
  if (!is_valid_id(id)) return invalid_id_text(id);
  return sp_->IdToPiece(id);
}

bool SentencePieceTokenizer::ends_mid_character(std::span<const int> ids) const {
  // Only a run of byte pieces can end mid-character (SentencePiece joins bytes
  // of consecutive byte pieces only), and a partial character is at most 3 bytes.
  char tail[3];
  int n = 0;
  for (size_t i = ids.size(); i > 0 && n < 3; --i) {
    const int id = ids[i - 1];
    if (!is_valid_id(id) || byte_of_[id] < 0) break;
    tail[2 - n] = static_cast<char>(byte_of_[id]);
    ++n;
  }
  const std::string_view s(tail + 3 - n, n);
  return complete_utf8_prefix(s) < s.size();
}

}  // namespace fdpp
