#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace fdpp {
namespace {

Status os_error(const std::filesystem::path& path, const char* what, int err) {
  std::string msg = fmt::format("{} '{}': {}", what, path.string(), std::strerror(err));
  return err == ENOENT ? NotFound(std::move(msg)) : IoError(std::move(msg));
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  // Only a regular file can be mapped as weights (a FIFO or device has no meaningful size),
  // and the check must come before a blocking open (core/regular_file.h).
  FDPP_ASSIGN_OR_RETURN(UniqueFd fd, open_regular_file(path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return os_error(path, "cannot stat", errno);

  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* addr = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      f.size_ = 0;
      return os_error(path, "cannot mmap", err);
    }
    f.addr_ = addr;
  }
  f.fd_ = std::move(fd);
  return f;
}

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)),
      fd_(std::move(other.fd_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
    fd_ = std::move(other.fd_);
  }
  return *this;
}

const uint8_t* MappedFile::data() const {
  static const uint8_t kEmpty[1] = {0};
  return addr_ ? static_cast<const uint8_t*>(addr_) : kEmpty;
}

void MappedFile::reset() {
  if (addr_) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
  fd_ = UniqueFd();
}

}  // namespace fdpp
