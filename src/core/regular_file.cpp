#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace fdpp {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Result<UniqueFd> open_regular_file(const std::filesystem::path& p) {
  const auto os_error = [&](int err) {
    std::string msg = fmt::format("cannot open '{}': {}", p.string(), std::strerror(err));
    return err == ENOENT || err == ENOTDIR ? NotFound(std::move(msg)) : IoError(std::move(msg));
  };
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return os_error(errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return os_error(errno);
  if (S_ISDIR(st.st_mode)) return os_error(EISDIR);
  if (!S_ISREG(st.st_mode))
    return IoError(fmt::format("cannot open '{}': not a regular file (a FIFO, socket or device)",
                               p.string()));
  // O_NONBLOCK means nothing to a regular file's reads; cleared so the descriptor is an
  // ordinary one for whoever uses it next.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::string> read_all(int fd, const std::string& what) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Result<std::string> read_regular_file(const std::filesystem::path& p) {
  FDPP_ASSIGN_OR_RETURN(UniqueFd fd, open_regular_file(p));
  return read_all(fd.get(), "'" + p.string() + "'");
}

}  // namespace fdpp
