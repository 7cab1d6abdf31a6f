// Shared helpers for the tests: where the test models live, scratch folders.
#pragma once

#include <filesystem>
#include <string>

#include "fdpp/engine.h"

namespace fdpp::test {

// The repository's models/ (FDPP_MODELS_DIR at configure time), or $FDPP_MODELS_DIR when set.
// Exits the test program with one line naming the folder when it has no stories260K/ or
// tokenizers/: a wrong path then reads as that, not as each test's own failure to load.
std::filesystem::path models_dir();
// A fresh, empty folder under the build tree for one test to write into.
std::filesystem::path scratch_dir(const std::string& name);
// The fdpp CLI built next to the tests.
std::filesystem::path fdpp_binary();
// Reads a whole file; empty string if it cannot.
std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& bytes);

// Greedy decoding of up to n new tokens.
inline SamplingParams greedy(int n) {
  SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = n;
  return p;
}

}  // namespace fdpp::test
