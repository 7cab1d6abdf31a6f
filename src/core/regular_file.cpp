#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

namespace fdpp {

Status write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return IoError(fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  std::string tmp = path.string() + ".tmpXXXXXX";
  UniqueFd fd(::mkstemp(tmp.data()));
  if (fd.get() < 0)
    return IoError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  const auto fail = [&](const std::string& what, int err) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return IoError(fmt::format("{}: {}", what, std::strerror(err)));
  };
  // mkstemp makes the file private (0600); a table or calibration is for every user.
  if (::fchmod(fd.get(), 0644) != 0) return fail("cannot chmod " + tmp, errno);
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("writing " + tmp + " failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd.release()) != 0) return fail("writing " + tmp + " failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(fmt::format("cannot rename {} to {}", tmp, path.string()), errno);
  return Status::Ok();
}

}  // namespace fdpp
