// Opening a file fdpp reads (a model folder's files, a path given on the command line, a
// cache file): only a regular file is accepted, and the check cannot hang.
//
// open(2) of a FIFO blocks until a writer appears, so a check after a plain open (or an
// ifstream) comes too late: `mkfifo model.safetensors` would hang the loader forever. The
// file is opened with O_NONBLOCK, which makes that open return at once, and fstat on the
// descriptor (not stat on the name, which a rename can change in between) decides. A
// directory opens fine with O_RDONLY and an ifstream then fails on its first read with an
// exception or silently; it is refused here, by name, too.
#pragma once

#include <filesystem>
#include <string>

#include "fdpp/status.h"

namespace fdpp {

// An owned file descriptor, closed when it goes.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A read-only descriptor of the regular file `p` (symbolic links followed), blocking reads.
// Errors name the path: NotFound "cannot open 'P': No such file or directory"; IoError
// "cannot open 'P': Is a directory", "cannot open 'P': not a regular file (a FIFO, socket or
// device)", or the OS reason (permission, ...).
Result<UniqueFd> open_regular_file(const std::filesystem::path& p);

// The whole content of the regular file `p`, read through open_regular_file (same errors;
// IoError "cannot read 'P': ..." if a read fails).
Result<std::string> read_regular_file(const std::filesystem::path& p);

// Reads everything from `fd` (a pipe too) to its end; `what` names it in the error.
Result<std::string> read_all(int fd, const std::string& what);

}  // namespace fdpp

namespace fdpp {

// Writes `content` to `path` so that a reader sees the old file or the new one, never a
// mix: into a temporary file of a unique name beside it (mkstemp), then rename(2), which
// replaces atomically within a directory. A fixed temporary name would let two writers
// interleave their bytes in it before either renames. Creates the parent directories; the
// file gets mode 0644. IoError names the path and the OS reason.
Status write_file_atomically(const std::filesystem::path& path, const std::string& content);

}  // namespace fdpp
