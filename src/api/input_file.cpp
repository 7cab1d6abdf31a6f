// fdpp/input_file.h over core/regular_file.h.
#include "fdpp/input_file.h"

#include <unistd.h>

#include "core/regular_file.h"

namespace fdpp {

Result<std::string> read_input_file(const std::string& path) {
  if (path == "-") return read_all(STDIN_FILENO, "standard input");
  return read_regular_file(path);
}

}  // namespace fdpp
