// fdpp: a FlashDecoding++ inference engine. `fdpp --help` lists the subcommands.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
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
    // from_chars, not stoll: no locale, no leading '+' or spaces, and an overflow of 64 bits
    // is reported (result_out_of_range) rather than thrown.
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    const bool whole = !item.empty() && end == item.data() + item.size();
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc() && whole && (v < INT32_MIN || v > INT32_MAX)))
      return InvalidArgument("'" + item + "' in the id list '" + s + "' is out of range (at most " +
                             std::to_string(INT32_MAX) + ")");
    if (ec != std::errc() || !whole)
      return InvalidArgument("'" + item + "' in the id list '" + s + "' is not an integer");
    ids.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return ids;
}

Result<int> json_token_id(const nlohmann::json& v, const std::string& where) {
  // nlohmann reads an integer past uint64 as a double: out of range, not "not an integer".
  const bool huge_integral = v.is_number_float() && std::isfinite(v.get<double>()) &&
                             std::floor(v.get<double>()) == v.get<double>() &&
                             std::fabs(v.get<double>()) > double{INT32_MAX};
  if (!v.is_number_integer() && !huge_integral)
    return InvalidArgument(where + ": ids must be integers, got " + v.dump());
  // An unsigned JSON integer past int64 reads as unsigned; compare before any narrowing.
  const bool negative = !v.is_number_unsigned() && v.get<double>() < 0;
  if (huge_integral || negative ||
      (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t{INT32_MAX}
                              : v.get<int64_t>() > INT32_MAX))
    return InvalidArgument(where + ": id " + v.dump() + " is out of range (ids are 0 to " +
                           std::to_string(INT32_MAX) + ")");
  return static_cast<int>(v.get<int64_t>());
}

const CLI::Validator& finite_number() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        // An unparsable value is left to CLI11's conversion, which names the expected type.
        if (end == text.c_str()) return {};
        if (!std::isfinite(x)) return "must be a finite number, got '" + text + "'";
        return {};
      },
      "FINITE");
  return v;
}

const CLI::Validator& fits_int64() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        int64_t x = 0;
        const char* b = text.data();
        const auto [end, ec] = std::from_chars(b, b + text.size(), x);
        if (ec == std::errc::result_out_of_range)
          return "'" + text + "' is past the 64-bit range (" + std::to_string(INT64_MIN) + " to " +
                 std::to_string(INT64_MAX) + ")";
        return {};  // not an integer at all: CLI11's conversion names the type
      },
      "INT64");
  return v;
}

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        return text.empty() ? "the " + what + " is empty" : std::string();
      },
      "NONEMPTY");
}

std::string human_count(int64_t n) {
  const double x = static_cast<double>(n);
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", x / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", x / 1e6);
  if (n >= 1'000) return fmt::format("{:.0f} K", x / 1e3);
  return std::to_string(n);
}

// CLI11's errors as one "fdpp: error: ..." line (its own are two, the second a --help hint).
std::string one_line_failure(const CLI::App*, const CLI::Error& e) {
  std::string what = e.what();
  for (char& c : what)
    if (c == '\n') c = ' ';
  while (!what.empty() && what.back() == ' ') what.pop_back();
  return "fdpp: error: " + what + "\n";
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
  // A subcommand hands options it does not know to the app, so -v works after it too.
  app.fallthrough();
  app.failure_message(fdpp::cli::one_line_failure);
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
    // --help and --version are "errors" with status 0 and print to stdout.
    if (e.get_exit_code() == 0) return app.exit(e);
    app.exit(e);
    return fdpp::cli::kUsageExit;
  }
  return exit_code;
}
