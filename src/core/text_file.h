// Reading a whole (small) file: configs, tokenizer files, tables.
#pragma once

#include <filesystem>
#include <string>

#include "fdpp/status.h"

namespace fdpp {

// The bytes of `p`. Missing (or not a regular file) is NotFound, so a caller may have another
// plan; present but unreadable is an IoError.
Result<std::string> read_text_file(const std::filesystem::path& p);

}  // namespace fdpp
