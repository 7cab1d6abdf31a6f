// GPT-2 byte-level BPE (GPT-2, OPT, RoBERTa-style vocab.json + merges.txt), equal to
// transformers' GPT2Tokenizer / GPT2TokenizerFast with add_prefix_space false:
//   1. special tokens (<|endoftext|>, OPT's <s> <pad> </s> <unk>, ...) are split out of
//      the text first and become their ids;
//   2. each stretch between them is cut by the GPT-2 pre-tokenizer regex;
//   3. each piece's UTF-8 bytes become vocabulary symbols through GPT-2's byte-to-unicode
//      table (printable bytes stand for themselves, the rest for U+0100 + n, so " " is "Ġ");
//   4. adjacent symbols merge in merges.txt rank order, lowest rank first and, among equal
//      ranks, leftmost first (OpenAI's encoder.py; tokenizers' priority queue), in
//      O(n log n) per piece with a cache of recent pieces.
// Decoding concatenates the tokens' bytes and replaces invalid UTF-8 by U+FFFD per maximal
// subpart (errors="replace"); special tokens give no text. The ids are vocab.json's: OPT's
// file numbers the same pieces differently from GPT-2's (fairseq's dictionary order after
// <s> <pad> </s> <unk>), so the model folder's own vocab.json is always the one to use.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/gpt2_pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

class Gpt2BpeTokenizer final : public Tokenizer {
 public:
  struct Options {
    bool add_bos = false;  // GPT-2: false; OPT: true (its BOS is </s>)
    // BOS / EOS: the piece named here if the vocabulary has it, else the fallback id, else none.
    std::string bos_piece;
    std::string eos_piece;
    int fallback_bos_id = -1;
    int fallback_eos_id = -1;
    // Pieces that are special tokens (split out of text, no text when decoded); those
    // absent from the vocabulary are ignored. BOS and EOS are always special.
    std::vector<std::string> special_pieces;
  };

  // Corrupt when vocab.json is not a {piece: id} object with ids 0..n-1, or a merge of
  // merges.txt names a piece the vocabulary lacks.
  static Result<std::unique_ptr<Gpt2BpeTokenizer>> from_strings(std::string_view vocab_json,
                                                                std::string_view merges_txt,
                                                                const Options& opts);
  // NotFound / IoError for the files, Corrupt for their contents; messages name the path.
  static Result<std::unique_ptr<Gpt2BpeTokenizer>> load(const std::filesystem::path& vocab_json,
                                                        const std::filesystem::path& merges_txt,
                                                        const Options& opts);
  ~Gpt2BpeTokenizer() override;

  Result<std::vector<int>> encode(std::string_view text, bool add_bos) const override;
  std::string decode(std::span<const int> ids) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  // The vocabulary entry in byte-level spelling: "Ġworld", "</s>".
  std::string token_text(int id) const override;
  bool ends_mid_character(std::span<const int> ids) const override;

  // The id of a vocabulary piece (byte-level spelling), or -1.
  int piece_to_id(std::string_view piece) const;
  bool is_special(int id) const { return is_valid_id(id) && special_[id]; }

 private:
  explicit Gpt2BpeTokenizer(Gpt2PreTokenizer pre);
  // BPE of one pre-token (its raw bytes), appended to `out`.
  void encode_piece(std::string_view bytes, std::vector<int>& out) const;
  std::vector<int> merge(std::string_view bytes) const;

  Gpt2PreTokenizer pre_;
  std::unordered_map<std::string, int> vocab_;  // byte-level piece -> id
  std::vector<std::string> pieces_;             // (vocab) id -> byte-level piece
  std::vector<std::string> bytes_of_;           // (vocab) id -> the raw bytes it stands for
  std::vector<char> special_;                   // (vocab) 1 for special tokens
  std::vector<std::string> specials_;           // special pieces, longest first (for splitting)
  std::array<int, 256> byte_id_{};              // the single-byte symbol of each byte
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int, int>> merges_;

  // Recent pieces' ids: BPE dominates encoding time and text repeats its words.
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace fdpp
