// fdpp: a FlashDecoding++ inference engine. `fdpp --help` lists the subcommands.
#include <cstdio>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.h"

namespace fdpp::cli {

int fail(const Status& s) { return fail(s.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "fdpp: error: %s\n", message.c_str());
  return 1;
}

Result<std::vector<int>> parse_id_list(const std::string& s) {
  std::vector<int> ids;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    size_t used = 0;
    long long v = 0;
    bool ok = !item.empty();
    if (ok) {
      try {
        v = std::stoll(item, &used);
      } catch (...) {
        ok = false;
      }
    }
    if (!ok || used != item.size() || v < INT32_MIN || v > INT32_MAX)
      return InvalidArgument("'" + item + "' in the id list '" + s + "' is not an integer");
    ids.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return ids;
}

}  // namespace fdpp::cli

int main(int argc, char** argv) {
  // Logs go to stderr so stdout carries only the generated text (or JSON).
  spdlog::set_default_logger(spdlog::stderr_color_mt("fdpp"));
  spdlog::set_pattern("[%^%l%$] %v");

  CLI::App app{"fdpp: a FlashDecoding++ LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fdpp 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging");
  int exit_code = 0;
  fdpp::cli::add_generate(app, exit_code);
  fdpp::cli::add_tokenize(app, exit_code);
  fdpp::cli::add_info(app, exit_code);
  fdpp::cli::add_logits(app, exit_code);
  fdpp::cli::add_bench(app, exit_code);
  fdpp::cli::add_bench_gemm(app, exit_code);
  fdpp::cli::add_calibrate(app, exit_code);
  fdpp::cli::add_bench_attention(app, exit_code);
  fdpp::cli::add_tune(app, exit_code);
  fdpp::cli::add_template(app, exit_code);
  app.parse_complete_callback([&] { spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
