// Safetensors reader: one file, or the shards of a Hugging Face model folder.
//
// File layout: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F16", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {str: str}}
// then the data region; offsets are relative to its start. Everything in the
// header is untrusted: each size is checked against the file before it is used,
// with overflow-checked arithmetic, and every error names the file and tensor.
// Tensors point into a read-only mmap of the file, so nothing is copied until
// convert_tensor reads it (with pread: a file truncated during the load is an error, not
// a SIGBUS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp {

// The header may claim at most this many bytes (the reference implementation's limit).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  std::string dtype_name;      // as written in the header: "F16", "BF16", "I64", ...
  std::optional<DType> dtype;  // set for F32/F16/BF16, the dtypes fdpp loads
  Shape shape;                 // rank 0..4; rank 0 is a scalar (one element)
  const uint8_t* data = nullptr;  // into the file's mapping; may be unaligned
  size_t nbytes = 0;
  std::filesystem::path file;
  // Where convert_tensor reads the bytes from (pread, not the mapping): the open file and the
  // start of its mapping, so data - mapping is the offset of data in the file (a view of some
  // rows, data moved forward, stays right). fd < 0: no file, data is read directly.
  int fd = -1;
  const uint8_t* mapping = nullptr;
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::filesystem::path& path);

  // Sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr if absent.
  const TensorInfo* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  // TensorInfo::data points into file_'s mapping, whose address survives moves.
  MappedFile file_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a model folder: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json`. A path to a single .safetensors file also works.
class SafetensorsModel {
 public:
  static Result<SafetensorsModel> open(const std::filesystem::path& dir);

  // nullptr if absent.
  const TensorInfo* find(std::string_view name) const;
  // Sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  // Sum of the tensors' nbytes.
  size_t total_bytes() const { return total_bytes_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  std::vector<SafetensorsFile> files_;  // keeps the mappings alive
  std::vector<TensorInfo> tensors_;     // all shards' tensors, sorted by name
  size_t total_bytes_ = 0;
};

// Copies `t` into `out` as `target` (F32, F16 or BF16), rounding to nearest
// even when narrowing. `out` must hold numel * dtype_size(target) bytes, i.e.
// t.nbytes / elem_size(t) * dtype_size(target). Unsupported if `t` is not
// F32/F16/BF16; InvalidArgument for another target. Reads the file with pread (TensorInfo::fd):
// Corrupt when the file has become shorter than the tensor since it was opened, IoError
// when a read fails.
Status convert_tensor(const TensorInfo& t, DType target, void* out);

}  // namespace fdpp
