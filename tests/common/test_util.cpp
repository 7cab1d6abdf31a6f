#include "test_util.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fdpp::test {

std::filesystem::path models_dir() {
  if (const char* env = std::getenv("FDPP_MODELS_DIR"); env && *env) return env;
  return FDPP_TEST_MODELS_DIR;
}

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::path(FDPP_TEST_BINARY_DIR) / "test_scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path fdpp_binary() { return std::filesystem::path(FDPP_TEST_BINARY_DIR) / "fdpp"; }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace fdpp::test
