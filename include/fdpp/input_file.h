// Files named on the command line (--prompt-file, --ids, --input-jsonl, a template): read
// whole, with the library's file checks, so a directory, a FIFO or a missing file is one
// clear error instead of a hang, an escaping exception or silently empty input.
#pragma once

#include <string>

#include "fdpp/status.h"

namespace fdpp {

// The bytes of the regular file `path`; "-" reads standard input to its end (a pipe, a
// terminal or a redirected file). Errors name the path: "cannot open 'P': Is a directory",
// "cannot open 'P': not a regular file (a FIFO, socket or device)", "cannot open 'P': No
// such file or directory" (NotFound), or the OS reason.
Result<std::string> read_input_file(const std::string& path);

}  // namespace fdpp
