// Reading a whole (small) file: configs, tokenizer files, tables.
#pragma once

#include <filesystem>
#include <string>

#include "fdpp/status.h"

namespace fdpp {

// The bytes of `p`. Missing is NotFound, so a caller may have another plan; present but a
// directory, a FIFO or another special file, or unreadable, is an IoError (read_regular_file).
Result<std::string> read_text_file(const std::filesystem::path& p);

}  // namespace fdpp
