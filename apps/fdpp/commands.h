// The fdpp subcommands. Each registers its options on a CLI11 app and returns
// the process exit code; library errors arrive as a Status and are printed as
// one line by fail().
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fdpp/status.h"

namespace fdpp::cli {

// Prints "fdpp: error: <message>" to stderr; returns the exit code 1.
int fail(const Status& s);
int fail(const std::string& message);

// "1,2,3" -> {1, 2, 3}; an InvalidArgument naming the bad item otherwise.
Result<std::vector<int>> parse_id_list(const std::string& s);

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
