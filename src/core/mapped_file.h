// MappedFile: a read-only memory map of a whole file. Model weights are read
// through it so a 13 GB checkpoint costs page-cache pages, not a heap copy, and
// tensors can point straight into the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "core/regular_file.h"
#include "fdpp/status.h"

namespace fdpp {

class MappedFile {
 public:
  // Errors name the path and the OS reason: NotFound for a missing file,
  // IoError for a directory, a special file, a permission or mmap failure.
  static Result<MappedFile> open(const std::filesystem::path& path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Never null, even for an empty file (mmap of 0 bytes is an error, so an
  // empty file is not mapped; callers may still memcpy 0 bytes from here).
  // The address is fixed for the object's life, moves included.
  const uint8_t* data() const;
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  // The file, open for reading as long as the mapping lives (pread: see convert_tensor).
  int fd() const { return fd_.get(); }

 private:
  void reset();

  void* addr_ = nullptr;  // the mapping; null when size_ == 0
  size_t size_ = 0;
  std::filesystem::path path_;
  UniqueFd fd_;
};

}  // namespace fdpp
