#include "tokenizer/gpt2_bpe_tokenizer.h"

#include <algorithm>
#include <queue>

#include <nlohmann/json.hpp>

#include "core/text_file.h"
#include "tokenizer/utf8.h"

namespace fdpp {
namespace {

// Pieces longer than this are merged without the cache: long runs (a line of '=' or
// base64) rarely repeat and would only push out the words that do.
constexpr size_t kMaxCachedPieceBytes = 128;
constexpr size_t kMaxCacheEntries = 1 << 16;

uint64_t pair_key(int a, int b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode(): the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
// themselves; the other 68 (controls, space, DEL, NBSP, soft hyphen) for U+0100 + n in
// byte order, so that every byte has a visible, non-space symbol.
std::array<uint32_t, 256> byte_to_codepoint() {
  std::array<uint32_t, 256> cp{};
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    cp[b] = printable ? static_cast<uint32_t>(b) : next++;
  }
  return cp;
}

// The raw bytes a byte-level piece stands for. A piece with a character outside the
// byte alphabet (an added token such as "<|endoftext|>" is inside it; a CJK added
// token would not be) stands for its own UTF-8, as tokenizers' ByteLevel decoder does.
std::string piece_bytes(const std::string& piece,
                        const std::unordered_map<uint32_t, uint8_t>& byte_of_cp) {
  std::string out;
  size_t i = 0;
  while (i < piece.size()) {
    const auto c = static_cast<uint8_t>(piece[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < piece.size()) {
      cp = ((c & 0x1Fu) << 6) | (piece[i + 1] & 0x3F), len = 2;
    } else {
      return piece;  // 3-byte and longer characters are never byte symbols
    }
    auto it = byte_of_cp.find(cp);
    if (it == byte_of_cp.end()) return piece;
    out += static_cast<char>(it->second);
    i += len;
  }
  return out;
}


}  // namespace

Gpt2BpeTokenizer::Gpt2BpeTokenizer(Gpt2PreTokenizer pre) : pre_(std::move(pre)) {}
Gpt2BpeTokenizer::~Gpt2BpeTokenizer() = default;

Result<std::unique_ptr<Gpt2BpeTokenizer>> Gpt2BpeTokenizer::from_strings(
    std::string_view vocab_json, std::string_view merges_txt, const Options& opts) {
  FDPP_ASSIGN_OR_RETURN(Gpt2PreTokenizer pre, Gpt2PreTokenizer::create());
  std::unique_ptr<Gpt2BpeTokenizer> t(new Gpt2BpeTokenizer(std::move(pre)));

  // ---- vocab.json: {piece: id}, ids 0..n-1 ----
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(vocab_json);
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(std::string("vocab.json is not valid JSON: ") + e.what());
  }
  if (!j.is_object() || j.empty())
    return Corrupt("vocab.json must be a non-empty {piece: id} object");
  const size_t n = j.size();
  t->pieces_.assign(n, std::string());
  std::vector<char> seen(n, 0);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() >= static_cast<int64_t>(n))
      return Corrupt("vocab.json: piece '" + it.key() + "' has id " + v.dump() +
                     ", not an integer in [0, " + std::to_string(n) + ")");
    const auto id = static_cast<size_t>(v.get<int64_t>());
    if (seen[id]) return Corrupt("vocab.json: id " + std::to_string(id) + " is used twice");
    seen[id] = 1;
    t->pieces_[id] = it.key();
    t->vocab_.emplace(it.key(), static_cast<int>(id));
  }

  // ---- the byte alphabet ----
  const std::array<uint32_t, 256> cp_of = byte_to_codepoint();
  std::unordered_map<uint32_t, uint8_t> byte_of_cp;
  for (int b = 0; b < 256; ++b) {
    byte_of_cp[cp_of[b]] = static_cast<uint8_t>(b);
    std::string sym;
    append_utf8(cp_of[b], sym);
    const int id = t->piece_to_id(sym);
    if (id < 0)
      return Corrupt("vocab.json lacks the byte-level symbol of byte " + std::to_string(b) + " ('" +
                     sym + "'): not a GPT-2 byte-level vocabulary");
    t->byte_id_[b] = id;
  }
  t->bytes_of_.resize(n);
  for (size_t id = 0; id < n; ++id) t->bytes_of_[id] = piece_bytes(t->pieces_[id], byte_of_cp);

  // ---- merges.txt: "left right" per line, rank = line order; "#version" header skipped ----
  int rank = 0;
  size_t line_no = 0, pos = 0;
  while (pos < merges_txt.size()) {
    size_t end = merges_txt.find('\n', pos);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      return Corrupt("merges.txt line " + std::to_string(line_no) + " is not 'left right': '" +
                     std::string(line) + "'");
    const std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
    const int a = t->piece_to_id(left), b = t->piece_to_id(right), m = t->piece_to_id(left + right);
    if (a < 0 || b < 0 || m < 0)
      return Corrupt("merges.txt line " + std::to_string(line_no) + " ('" + std::string(line) +
                     "') names a piece vocab.json lacks");
    t->merges_.emplace(pair_key(a, b), std::make_pair(rank++, m));  // a repeat keeps its first rank
  }

  // ---- special tokens ----
  t->special_.assign(n, 0);
  auto pick = [&](const std::string& piece, int fallback) {
    if (const int id = t->piece_to_id(piece); !piece.empty() && id >= 0) return id;
    return fallback >= 0 && fallback < static_cast<int>(n) ? fallback : -1;
  };
  t->bos_id_ = pick(opts.bos_piece, opts.fallback_bos_id);
  t->eos_id_ = pick(opts.eos_piece, opts.fallback_eos_id);
  t->add_bos_ = opts.add_bos && t->bos_id_ >= 0;
  std::vector<int> special_ids;
  for (const std::string& s : opts.special_pieces)
    if (const int id = t->piece_to_id(s); !s.empty() && id >= 0) special_ids.push_back(id);
  for (const int id : {t->bos_id_, t->eos_id_})
    if (id >= 0) special_ids.push_back(id);
  for (const int id : special_ids) {
    if (t->special_[id]) continue;
    t->special_[id] = 1;
    t->specials_.push_back(t->pieces_[id]);
  }
  // Longest first: where two specials start at the same offset the longer one wins.
  std::stable_sort(t->specials_.begin(), t->specials_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return t;
}

Result<std::unique_ptr<Gpt2BpeTokenizer>> Gpt2BpeTokenizer::load(
    const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt,
    const Options& opts) {
  FDPP_ASSIGN_OR_RETURN(std::string vocab, read_text_file(vocab_json));
  FDPP_ASSIGN_OR_RETURN(std::string merges, read_text_file(merges_txt));
  auto t = from_strings(vocab, merges, opts);
  if (!t.ok())
    return t.status().with_context(vocab_json.string() + " + " + merges_txt.filename().string());
  return t;
}

int Gpt2BpeTokenizer::piece_to_id(std::string_view piece) const {
  auto it = vocab_.find(std::string(piece));
  return it == vocab_.end() ? -1 : it->second;
}

std::vector<int> Gpt2BpeTokenizer::merge(std::string_view bytes) const {
  // A doubly linked list of symbols and a min-queue of mergeable neighbours keyed by
  // (rank, position): each merge is O(log n), so a piece costs O(n log n), not the
  // O(n²) of rescanning every pair after every merge.
  struct Sym {
    int id, prev, next;
  };
  struct Cand {
    int rank, pos, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int n = static_cast<int>(bytes.size());
  std::vector<Sym> sym(n);
  for (int i = 0; i < n; ++i)
    sym[i] = {byte_id_[static_cast<uint8_t>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
  auto offer = [&](int pos) {
    const int next = sym[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pair_key(sym[pos].id, sym[next].id));
    if (it != merges_.end()) queue.push({it->second.first, pos, it->second.second});
  };
  for (int i = 0; i + 1 < n; ++i) offer(i);
  while (!queue.empty()) {
    const Cand c = queue.top();
    queue.pop();
    Sym& a = sym[c.pos];
    if (a.id < 0 || a.next < 0) continue;  // merged away, or nothing to its right any more
    // Stale when either neighbour has changed since the candidate was queued.
    auto it = merges_.find(pair_key(a.id, sym[a.next].id));
    if (it == merges_.end() || it->second.first != c.rank || it->second.second != c.merged)
      continue;
    Sym& b = sym[a.next];
    a.id = c.merged;
    b.id = -1;
    a.next = b.next;
    if (b.next >= 0) sym[b.next].prev = c.pos;
    if (a.prev >= 0) offer(a.prev);
    offer(c.pos);
  }
  std::vector<int> ids;
  for (int i = 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);  // symbol 0 never dies
  return ids;
}

void Gpt2BpeTokenizer::encode_piece(std::string_view bytes, std::vector<int>& out) const {
  if (bytes.size() == 1) {
    out.push_back(byte_id_[static_cast<uint8_t>(bytes[0])]);
    return;
  }
  const bool cacheable = bytes.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (auto it = cache_.find(std::string(bytes)); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids = merge(bytes);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();  // crude, bounded, and rare
    cache_.emplace(std::string(bytes), std::move(ids));
  }
}

Result<std::vector<int>> Gpt2BpeTokenizer::encode(std::string_view text, bool add_bos) const {
  if (const size_t bad = utf8_error_offset(text); bad != text.size())
    return InvalidArgument("text to encode is not valid UTF-8 (invalid byte at offset " +
                           std::to_string(bad) + " of " + std::to_string(text.size()) + ")");
  std::vector<int> ids;
  if (add_bos && bos_id_ >= 0) ids.push_back(bos_id_);
  size_t pos = 0;
  while (pos < text.size()) {
    // The next special token: earliest start, then longest.
    size_t at = std::string_view::npos;
    const std::string* hit = nullptr;
    for (const std::string& s : specials_) {
      const size_t p = text.find(s, pos);
      if (p < at) at = p, hit = &s;  // specials_ is longest first: ties keep the longer
    }
    const std::string_view plain = text.substr(pos, (hit ? at : text.size()) - pos);
    FDPP_ASSIGN_OR_RETURN(const std::vector<std::string_view> pieces, pre_.split(plain));
    for (std::string_view piece : pieces) encode_piece(piece, ids);
    if (!hit) break;
    ids.push_back(piece_to_id(*hit));
    pos = at + hit->size();
  }
  return ids;
}

std::string Gpt2BpeTokenizer::decode(std::span<const int> ids) const {
  std::string out, run;  // run: bytes since the last invalid id, decoded together
  for (const int id : ids) {
    if (!is_valid_id(id)) {
      out += utf8_lossy(run);
      run.clear();
      out += invalid_id_text(id);
    } else if (!special_[id]) {
      run += bytes_of_[id];
    }
  }
  return out + utf8_lossy(run);
}

std::string Gpt2BpeTokenizer::token_text(int id) const {
  return is_valid_id(id) ? pieces_[id] : invalid_id_text(id);
}

bool Gpt2BpeTokenizer::ends_mid_character(std::span<const int> ids) const {
  // A partial character is at most 3 bytes: collect the last 3 bytes of the run decode()
  // would join them into (special tokens add none; an invalid id ends the run).
  std::string tail;
  for (size_t i = ids.size(); i > 0 && tail.size() < 3; --i) {
    const int id = ids[i - 1];
    if (!is_valid_id(id)) break;
    if (special_[id]) continue;
    tail.insert(0, bytes_of_[id]);
  }
  if (tail.size() > 3) tail.erase(0, tail.size() - 3);
  return complete_utf8_prefix(tail) < tail.size();
}

}  // namespace fdpp
