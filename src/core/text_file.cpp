#include "core/text_file.h"

#include <fstream>
#include <sstream>
#include <system_error>

namespace fdpp {

Result<std::string> read_text_file(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return NotFound(p.string() + " does not exist");
  std::ifstream f(p, std::ios::binary);
  if (!f) return IoError("cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return IoError("cannot read " + p.string());
  return ss.str();
}

}  // namespace fdpp
