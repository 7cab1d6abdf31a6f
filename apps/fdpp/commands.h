// The fdpp subcommands. Each registers its options on a CLI11 app and returns
// the process exit code; library errors arrive as a Status and are printed as
// one line by fail().
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "fdpp/status.h"

namespace fdpp::cli {

// Prints "fdpp: error: <message>" to stderr; returns the exit code 1.
int fail(const Status& s);
int fail(const std::string& message);

// The exit status of a command line that does not parse (an unknown option, a missing or
// malformed value); every other error exits 1.
inline constexpr int kUsageExit = 2;

// "1,2,3" -> {1, 2, 3}; an InvalidArgument naming the bad item otherwise. Each item is
// range-checked as a 64-bit value before it narrows to int (4294967297 is not id 1).
Result<std::vector<int>> parse_id_list(const std::string& s);

// A token id read from JSON (logits --ids): an integer in [0, INT_MAX], checked before
// narrowing; `where` names the file in the error.
Result<int> json_token_id(const nlohmann::json& v, const std::string& where);

// The check every float option carries: the value must parse as a finite number (NaN and
// Inf would silently poison sampling or statistics).
const CLI::Validator& finite_number();
// An integer option's text must fit in int64 (CLI11's own conversion saturates silently).
const CLI::Validator& fits_int64();
// A text option given explicitly must not be empty; `what` names it in the error.
CLI::Validator non_empty(const std::string& what);

// "260 K", "1.10 B": a parameter count at a readable scale (small models round to 0.000 B).
std::string human_count(int64_t n);

// Each sets `exit_code` when its subcommand runs.
void add_generate(CLI::App& app, int& exit_code);
void add_tokenize(CLI::App& app, int& exit_code);
void add_info(CLI::App& app, int& exit_code);
void add_logits(CLI::App& app, int& exit_code);
void add_bench(CLI::App& app, int& exit_code);
void add_bench_gemm(CLI::App& app, int& exit_code);
void add_calibrate(CLI::App& app, int& exit_code);
void add_bench_attention(CLI::App& app, int& exit_code);
void add_tune(CLI::App& app, int& exit_code);
void add_template(CLI::App& app, int& exit_code);

}  // namespace fdpp::cli
