#include "model/safetensors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <numeric>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join moved here in fmt 11
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "core/regular_file.h"

namespace fdpp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The safetensors dtype list. Sizes are in bits because the newer 4- and
// 6-bit float formats pack several elements per byte.
struct DTypeDesc {
  std::string_view name;
  uint32_t bits;
  std::optional<DType> dtype;  // set only for what fdpp loads
};
constexpr DTypeDesc kDTypes[] = {
    {"BOOL", 8, std::nullopt},    {"U8", 8, std::nullopt},       {"I8", 8, std::nullopt},
    {"I16", 16, std::nullopt},    {"U16", 16, std::nullopt},     {"F16", 16, DType::kF16},
    {"BF16", 16, DType::kBF16},   {"I32", 32, std::nullopt},     {"U32", 32, std::nullopt},
    {"F32", 32, DType::kF32},     {"F64", 64, std::nullopt},     {"I64", 64, std::nullopt},
    {"U64", 64, std::nullopt},    {"F8_E4M3", 8, std::nullopt},  {"F8_E5M2", 8, std::nullopt},
    {"F8_E8M0", 8, std::nullopt}, {"F6_E2M3", 6, std::nullopt},  {"F6_E3M2", 6, std::nullopt},
    {"F4", 4, std::nullopt},      {"C64", 64, std::nullopt},
};

const DTypeDesc* find_dtype(std::string_view name) {
  for (const DTypeDesc& d : kDTypes)
    if (d.name == name) return &d;
  return nullptr;
}

// Legit headers nest 3 deep (root -> tensor -> shape). nlohmann builds a node
// per level, so a header of 100 MB of '[' would cost gigabytes; refuse deep
// nesting with a scan that allocates nothing. On valid JSON the count is exact,
// and on invalid JSON the parser stops at the first error, before any deeper level.
constexpr int kMaxJsonDepth = 16;
bool json_depth_ok(const char* s, size_t n) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// A non-negative JSON integer that fits in int64 (shape dims and offsets both
// end up in signed or size_t arithmetic).
bool json_to_u63(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = u;
    return true;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    *out = static_cast<uint64_t>(i);
    return true;
  }
  return false;
}

// A JSON value for an error message, without throwing on invalid UTF-8 and
// without echoing a huge value.
std::string short_dump(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

struct Entry {
  TensorInfo info;
  uint64_t begin, end;  // into the data region
};

Status parse_entry(const std::string& file, const std::string& name, const json& v,
                   uint64_t data_size, Entry* e) {
  auto err = [&](const std::string& what) {
    return Corrupt(fmt::format("{}: tensor '{}': {}", file, name, what));
  };
  if (!v.is_object()) return err("entry is not a JSON object");

  const auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) return err("missing or non-string \"dtype\"");
  const std::string& dtype_name = dt->get_ref<const std::string&>();
  const DTypeDesc* desc = find_dtype(dtype_name);
  if (!desc) return err(fmt::format("unknown dtype '{}'", dtype_name));

  const auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) return err("missing or non-array \"shape\"");
  if (sh->size() > static_cast<size_t>(kMaxRank)) {
    return Unsupported(fmt::format("{}: tensor '{}': rank {} (shape {}); fdpp handles rank <= {}",
                                   file, name, sh->size(), short_dump(*sh), kMaxRank));
  }
  Shape shape;
  // The element count of the non-zero dims must fit in int64 even when another
  // dim is 0, so Shape::numel() downstream cannot overflow.
  uint64_t numel = 1, nonzero = 1;
  for (const json& d : *sh) {
    uint64_t dim;
    if (!json_to_u63(d, &dim))
      return err(fmt::format("shape {} has an entry that is not a non-negative integer",
                             short_dump(*sh)));
    shape.dims[shape.rank++] = static_cast<int64_t>(dim);
    numel *= dim;  // cannot overflow: bounded by `nonzero` or zero
    if (dim && (__builtin_mul_overflow(nonzero, dim, &nonzero) ||
                nonzero > static_cast<uint64_t>(INT64_MAX)))
      return err(fmt::format("shape {} overflows", short_dump(*sh)));
  }

  const auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2)
    return err("\"data_offsets\" is not a [begin, end] pair");
  uint64_t begin, end;
  if (!json_to_u63((*off)[0], &begin) || !json_to_u63((*off)[1], &end))
    return err(fmt::format("data_offsets {} are not non-negative integers", short_dump(*off)));
  if (begin > end) return err(fmt::format("data_offsets [{}, {}]: begin > end", begin, end));
  if (end > data_size)
    return err(fmt::format("data_offsets [{}, {}] exceed the data region of {} bytes", begin, end,
                           data_size));

  uint64_t bits;
  const bool overflow = __builtin_mul_overflow(numel, static_cast<uint64_t>(desc->bits), &bits);
  if (overflow || bits % 8 != 0 || bits / 8 != end - begin) {
    const std::string need = overflow          ? "more bytes than fit in 64 bits"
                             : bits % 8 != 0 ? fmt::format("{} bits (not whole bytes)", bits)
                                             : fmt::format("{} bytes", bits / 8);
    return err(fmt::format("shape {} of {} needs {}, which does not match data_offsets [{}, {}] "
                           "({} bytes)",
                           shape.to_string(), dtype_name, need, begin, end, end - begin));
  }

  e->info.name = name;
  e->info.dtype_name = dtype_name;
  e->info.dtype = desc->dtype;
  e->info.shape = shape;
  e->info.nbytes = static_cast<size_t>(end - begin);
  e->begin = begin;
  e->end = end;
  return Status::Ok();
}

Status parse_header(const MappedFile& f, std::vector<TensorInfo>* tensors,
                    std::map<std::string, std::string>* metadata) {
  const std::string file = f.path().string();
  const uint64_t size = f.size();
  if (size < 8)
    return Corrupt(fmt::format("{}: {} bytes, too short for the 8-byte header length", file, size));

  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | f.data()[i];  // little-endian
  if (n > kSafetensorsMaxHeaderBytes)
    return Corrupt(fmt::format("{}: header length {} exceeds the limit of {} bytes", file, n,
                               kSafetensorsMaxHeaderBytes));
  if (n > size - 8)
    return Corrupt(fmt::format("{}: header length {} runs past the end of the {}-byte file", file,
                               n, size));
  const char* text = reinterpret_cast<const char*>(f.data() + 8);
  const uint64_t data_size = size - 8 - n;
  const uint8_t* data = f.data() + 8 + n;

  if (!json_depth_ok(text, n))
    return Corrupt(fmt::format("{}: header JSON nests deeper than {} levels", file, kMaxJsonDepth));
  json root;
  try {
    root = json::parse(text, text + n);
  } catch (const json::exception& ex) {
    return Corrupt(fmt::format("{}: header is not valid JSON: {}", file, ex.what()));
  }
  if (!root.is_object())
    return Corrupt(fmt::format("{}: header is a JSON {}, not an object", file, root.type_name()));

  std::vector<Entry> entries;
  entries.reserve(root.size());  // bounded by the header bytes, already checked
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        return Corrupt(fmt::format("{}: __metadata__ is not an object", file));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          return Corrupt(fmt::format("{}: __metadata__ value of '{}' is not a string", file, mk));
        (*metadata)[mk] = mv.get<std::string>();
      }
      continue;
    }
    Entry e;
    FDPP_RETURN_IF_ERROR(parse_entry(file, key, value, data_size, &e));
    e.info.data = data + e.begin;
    e.info.file = f.path();
    e.info.fd = f.fd();
    e.info.mapping = f.data();
    entries.push_back(std::move(e));
  }

  // Two tensors sharing bytes would alias silently; sorting by range makes any
  // overlap show up between neighbours. Empty tensors overlap nothing.
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Entry &x = entries[a], &y = entries[b];
    return std::pair(x.begin, x.end) < std::pair(y.begin, y.end);
  });
  const Entry* prev = nullptr;
  for (size_t i : order) {
    const Entry& e = entries[i];
    if (e.begin == e.end) continue;
    if (prev && prev->end > e.begin) {
      return Corrupt(fmt::format("{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", file,
                                 prev->info.name, prev->begin, prev->end, e.info.name, e.begin,
                                 e.end));
    }
    prev = &e;
  }

  tensors->reserve(entries.size());
  for (Entry& e : entries) tensors->push_back(std::move(e.info));
  std::sort(tensors->begin(), tensors->end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return Status::Ok();
}

const TensorInfo* find_sorted(const std::vector<TensorInfo>& v, std::string_view name) {
  auto it = std::lower_bound(v.begin(), v.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != v.end() && it->name == name ? &*it : nullptr;
}

bool is_pickle_checkpoint(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".ckpt";
}

// A shard name from the index must stay inside the model folder.
bool shard_path_is_safe(const std::string& s) {
  const fs::path p(s);
  if (s.empty() || p.is_absolute() || p.has_root_path()) return false;
  for (const fs::path& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

// ---- SafetensorsFile ------------------------------------------------------------

Result<SafetensorsFile> SafetensorsFile::open(const fs::path& path) {
  FDPP_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  SafetensorsFile f;
  try {
    FDPP_RETURN_IF_ERROR(parse_header(mapped, &f.tensors_, &f.metadata_));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(fmt::format("{}: out of memory while parsing the header", path.string()));
  } catch (const std::exception& ex) {
    return Corrupt(fmt::format("{}: bad header: {}", path.string(), ex.what()));
  }
  f.file_ = std::move(mapped);  // the address, and so every TensorInfo::data, is unchanged
  return f;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  return find_sorted(tensors_, name);
}

// ---- SafetensorsModel -----------------------------------------------------------

namespace {

Result<std::map<std::string, std::string>> read_weight_map(const fs::path& index_path) {
  const std::string file = index_path.string();
  // Read, not mapped: it is small, and a read of a file that shrinks meanwhile ends early
  // where a mapping would raise SIGBUS.
  FDPP_ASSIGN_OR_RETURN(const UniqueFd fd, open_regular_file(index_path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return IoError(fmt::format("cannot stat '{}': {}", file, std::strerror(errno)));
  if (static_cast<uint64_t>(st.st_size) > kSafetensorsMaxHeaderBytes)
    return Corrupt(fmt::format("{}: {} bytes, over the {}-byte limit for an index", file,
                               static_cast<uint64_t>(st.st_size), kSafetensorsMaxHeaderBytes));
  FDPP_ASSIGN_OR_RETURN(const std::string content, read_all(fd.get(), "'" + file + "'"));
  const char* text = content.data();
  if (!json_depth_ok(text, content.size()))
    return Corrupt(fmt::format("{}: JSON nests deeper than {} levels", file, kMaxJsonDepth));
  json root;
  try {
    root = json::parse(text, text + content.size());
  } catch (const json::exception& ex) {
    return Corrupt(fmt::format("{}: not valid JSON: {}", file, ex.what()));
  }
  const auto wm = root.is_object() ? root.find("weight_map") : root.end();
  if (!root.is_object() || wm == root.end() || !wm->is_object())
    return Corrupt(fmt::format("{}: no \"weight_map\" object", file));
  std::map<std::string, std::string> out;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      return Corrupt(fmt::format("{}: weight_map entry of '{}' is not a string", file, tensor));
    const std::string& s = shard.get_ref<const std::string&>();
    if (!shard_path_is_safe(s))
      return Corrupt(fmt::format("{}: tensor '{}': shard path '{}' escapes the model folder", file,
                                 tensor, s));
    // "./a.safetensors" and "a.safetensors" must open one file, not two that then
    // look like duplicates of each other.
    out[tensor] = fs::path(s).lexically_normal().string();
  }
  if (out.empty()) return Corrupt(fmt::format("{}: weight_map is empty", file));
  return out;
}

}  // namespace

Result<SafetensorsModel> SafetensorsModel::open(const fs::path& dir) {
  std::error_code ec;
  SafetensorsModel m;
  std::map<std::string, std::string> weight_map;  // tensor -> shard; empty for one file
  std::vector<std::string> shards;                // relative to dir, each once

  if (fs::is_regular_file(dir, ec)) {
    FDPP_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(dir));
    m.files_.push_back(std::move(f));
  } else if (!fs::is_directory(dir, ec)) {
    return NotFound(fmt::format("model folder '{}' does not exist", dir.string()));
  } else if (fs::exists(dir / "model.safetensors", ec)) {
    FDPP_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(dir / "model.safetensors"));
    m.files_.push_back(std::move(f));
  } else if (const fs::path index = dir / "model.safetensors.index.json"; fs::exists(index, ec)) {
    try {
      FDPP_ASSIGN_OR_RETURN(weight_map, read_weight_map(index));
      std::map<std::string, std::string> first_tensor;  // shard -> a tensor it should hold
      for (const auto& [tensor, shard] : weight_map) first_tensor.emplace(shard, tensor);
      for (const auto& [shard, tensor] : first_tensor) {
        auto f = SafetensorsFile::open(dir / shard);
        if (!f.ok()) {
          return f.status().with_context(
              fmt::format("{}: shard '{}' (holding '{}')", index.string(), shard, tensor));
        }
        shards.push_back(shard);
        m.files_.push_back(std::move(f).value());
      }
    } catch (const std::bad_alloc&) {
      return OutOfMemory(fmt::format("{}: out of memory while reading the index", index.string()));
    }
  } else {
    // Say why nothing loads: a pickle checkpoint can run code when unpickled,
    // so it is refused rather than parsed.
    std::vector<std::string> pickles, others;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (is_pickle_checkpoint(p)) pickles.push_back(p.filename().string());
      if (p.extension() == ".safetensors") others.push_back(p.filename().string());
    }
    std::sort(pickles.begin(), pickles.end());
    std::sort(others.begin(), others.end());
    if (!pickles.empty()) {
      return Unsupported(fmt::format(
          "'{}' holds only PyTorch pickle checkpoints ({}); fdpp refuses pickle files for safety "
          "(loading one can run arbitrary code). Convert the model to safetensors first, e.g. "
          "model.save_pretrained(dir, safe_serialization=True) in transformers",
          dir.string(), fmt::join(pickles, ", ")));
    }
    std::string hint;
    if (!others.empty())
      hint = fmt::format(" (found {}, but not under the standard names)", fmt::join(others, ", "));
    return NotFound(fmt::format(
        "no model.safetensors or model.safetensors.index.json in '{}'{}", dir.string(), hint));
  }

  // Merge the shards; a name in two shards would make the loaded weight depend
  // on shard order, so it is an error.
  for (const SafetensorsFile& f : m.files_)
    m.tensors_.insert(m.tensors_.end(), f.tensors().begin(), f.tensors().end());
  std::sort(m.tensors_.begin(), m.tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  for (size_t i = 1; i < m.tensors_.size(); ++i) {
    if (m.tensors_[i].name == m.tensors_[i - 1].name) {
      return Corrupt(fmt::format("tensor '{}' appears in two shards: {} and {}",
                                 m.tensors_[i].name, m.tensors_[i - 1].file.string(),
                                 m.tensors_[i].file.string()));
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    const size_t k = std::find(shards.begin(), shards.end(), shard) - shards.begin();
    if (!m.files_[k].find(tensor)) {
      return Corrupt(fmt::format("{}: lists tensor '{}' in shard '{}', which does not contain it",
                                 (dir / "model.safetensors.index.json").string(), tensor,
                                 m.files_[k].path().string()));
    }
  }
  for (const TensorInfo& t : m.tensors_) m.total_bytes_ += t.nbytes;
  return m;
}

const TensorInfo* SafetensorsModel::find(std::string_view name) const {
  return find_sorted(tensors_, name);
}

std::vector<std::string> SafetensorsModel::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const TensorInfo& t : tensors_) out.push_back(t.name);
  return out;
}

// ---- conversion -----------------------------------------------------------------

namespace {

// Mapped tensors need not be aligned (a header length that is not a multiple
// of 8 shifts every tensor), so elements are moved with memcpy.
inline float load_elem(const uint8_t* p, DType t) {
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
}

inline void store_elem(uint8_t* p, DType t, float f) {
  if (t == DType::kF32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t h = t == DType::kF16 ? f32_to_f16(f) : f32_to_bf16(f);
  std::memcpy(p, &h, 2);
}

template <DType kSrc, DType kDst>
void convert_loop(const uint8_t* src, uint8_t* dst, int64_t n) {
  constexpr size_t si = dtype_size(kSrc), di = dtype_size(kDst);
  // Threads pay off only once the tensor is past a few hundred KB.
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) store_elem(dst + i * di, kDst, load_elem(src + i * si, kSrc));
}

template <DType kSrc>
void convert_from(const uint8_t* src, DType dst_t, uint8_t* dst, int64_t n) {
  switch (dst_t) {
    case DType::kF32: return convert_loop<kSrc, DType::kF32>(src, dst, n);
    case DType::kF16: return convert_loop<kSrc, DType::kF16>(src, dst, n);
    case DType::kBF16: return convert_loop<kSrc, DType::kBF16>(src, dst, n);
    default: return;
  }
}

bool loadable(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The bytes [begin, begin + n) of `t` into `dst`. They are read with pread, not through the
// mapping: if the checkpoint is truncated (or rewritten shorter) after it was opened, a load
// from the mapping past the new end raises SIGBUS, which kills the process with no message;
// pread returns a short count, which becomes an error naming the file. A SIGBUS handler
// around the copy was the alternative, rejected: the conversion runs on OpenMP threads, and
// a siglongjmp out of a signal handler on one of them leaves the thread team undefined.
// From the page cache, pread costs the same copy the memcpy from the mapping did.
Status read_tensor_bytes(const TensorInfo& t, size_t begin, size_t n, uint8_t* dst) {
  if (t.fd < 0) {  // a tensor over memory of its own (tests build these), no file to shrink
    std::memcpy(dst, t.data + begin, n);
    return Status::Ok();
  }
  const uint64_t offset = static_cast<uint64_t>(t.data - t.mapping) + begin;
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(t.fd, dst + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError(fmt::format("{}: reading tensor '{}': {}", t.file.string(), t.name,
                                 std::strerror(errno)));
    }
    if (r == 0) {
      return Corrupt(fmt::format(
          "{}: tensor '{}' ends at byte {}, but the file now ends at byte {}: it was truncated "
          "after it was opened",
          t.file.string(), t.name, static_cast<uint64_t>(t.data - t.mapping) + t.nbytes,
          offset + got));
    }
    got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

Status convert_tensor(const TensorInfo& t, DType target, void* out) {
  if (!t.dtype || !loadable(*t.dtype)) {
    return Unsupported(fmt::format("{}: tensor '{}' has dtype {}; fdpp loads F32, F16 and BF16",
                                   t.file.string(), t.name, t.dtype_name));
  }
  if (!loadable(target)) {
    return InvalidArgument(fmt::format("tensor '{}': cannot convert to {}", t.name,
                                       dtype_name(target)));
  }
  const DType src_t = *t.dtype;
  const size_t si = dtype_size(src_t), di = dtype_size(target);
  const int64_t n = static_cast<int64_t>(t.nbytes / si);
  if (n == 0) return Status::Ok();
  if (!out || !t.data) return InvalidArgument(fmt::format("tensor '{}': null buffer", t.name));
  auto* dst = static_cast<uint8_t*>(out);
  if (src_t == target) return read_tensor_bytes(t, 0, t.nbytes, dst);  // bit-exact, NaN payloads too
  // Converted through a bounded buffer, so a large tensor costs no copy of its own size.
  constexpr int64_t kChunk = int64_t{1} << 20;  // elements
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(n, kChunk)) * si);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    FDPP_RETURN_IF_ERROR(read_tensor_bytes(t, static_cast<size_t>(i) * si, static_cast<size_t>(m) * si, buf.data()));
    uint8_t* d = dst + static_cast<size_t>(i) * di;
    switch (src_t) {
      case DType::kF32: convert_from<DType::kF32>(buf.data(), target, d, m); break;
      case DType::kF16: convert_from<DType::kF16>(buf.data(), target, d, m); break;
      case DType::kBF16: convert_from<DType::kBF16>(buf.data(), target, d, m); break;
      default: break;
    }
  }
  return Status::Ok();
}

}  // namespace fdpp
