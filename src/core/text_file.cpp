#include "core/text_file.h"

#include "core/regular_file.h"

namespace fdpp {

Result<std::string> read_text_file(const std::filesystem::path& p) { return read_regular_file(p); }

}  // namespace fdpp
