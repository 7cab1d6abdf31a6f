#include "test_util.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fdpp::test {

std::filesystem::path models_dir() {
  const char* env = std::getenv("FDPP_MODELS_DIR");
  const bool from_env = env && *env;
  const std::filesystem::path dir = from_env ? env : FDPP_TEST_MODELS_DIR;
  for (const char* sub : {"stories260K", "tokenizers"}) {
    if (!std::filesystem::is_directory(dir / sub)) {
      std::fprintf(stderr, "fdpp tests: the model folder %s has no %s/ (%s); it should be the "
                   "repository's models/\n", dir.c_str(), sub,
                   from_env ? "from $FDPP_MODELS_DIR" : "FDPP_MODELS_DIR at configure time");
      std::exit(1);
    }
  }
  return dir;
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
