// The fdpp binary fed bad numbers: sizes past the host's memory, out-of-range ids, NaN
// flags, malformed command lines. Each is one "fdpp: error: ..." line, exit status 1, no
// signal, in well under 2 s.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/test_util.h"

namespace fdpp {
namespace {

struct CliResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

CliResult run_fdpp(const std::string& args, const std::string& tag) {
  const auto dir = test::scratch_dir("clin_" + tag);
  const std::string cmd = test::fdpp_binary().string() + " " + args + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.signaled = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) >= 128);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(dir / "out");
  r.err = test::read_file(dir / "err");
  return r;
}

std::string stories() { return (test::models_dir() / "stories260K").string(); }

// Exactly the line "fdpp: error: <message>\n" on stderr, exit 1, no signal, under 2 s.
void expect_error(const CliResult& r, const std::string& message) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "fdpp: error: " + message + "\n");
  EXPECT_LT(r.seconds, 2.0);
}

// stories260K with config.json fields replaced.
std::filesystem::path model_with(const std::string& tag, const nlohmann::json& patch) {
  const auto dir = test::scratch_dir("clin_model_" + tag);
  std::filesystem::copy_file(test::models_dir() / "stories260K" / "model.safetensors",
                             dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  auto cfg = nlohmann::json::parse(test::read_file(test::models_dir() / "stories260K" / "config.json"));
  cfg.merge_patch(patch);
  std::ofstream(dir / "config.json") << cfg.dump();
  return dir;
}

TEST(CliNumbers, HugeLayerCountsAreRefusedUpFront) {
  const auto dir = model_with("layers", {{"num_hidden_layers", 2147483647}});
  expect_error(run_fdpp("info -m " + dir.string(), "layers"),
               dir.string() + ": field 'num_hidden_layers' is 2147483647, past fdpp's limit of 1024");
  const auto qkv = model_with("qkv", {{"head_dim", 268435456}});
  expect_error(run_fdpp("info -m " + qkv.string(), "qkv"),
               qkv.string() + ": field 'head_dim' is 268435456, past fdpp's limit of 4096");
}

// The CPU backend checks the host's available memory as the CUDA one checks the device's.
TEST(CliNumbers, TheCpuBackendRefusesWhatTheHostCannotHold) {
  const auto r = run_fdpp("generate -m " + stories() +
                              " --prompt-ids 1,2 -n 1 --device cpu --ctx 2000000000", "cpumem");
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fdpp: error: the model needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" GiB are free on cpu; lower --ctx or --batch\n"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 2.0);
}

}  // namespace
}  // namespace fdpp
