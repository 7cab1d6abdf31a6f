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

// Exactly the line "fdpp: error: <message>\n" on stderr, the exit status (1: a failed run,
// 2: a command line that does not parse), no signal, under 2 s.
void expect_error(const CliResult& r, const std::string& message, int status = 1) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, status) << r.err;
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

// Ids are range-checked as 64-bit values before they narrow: 4294967297 is not id 1.
TEST(CliNumbers, IdsPast32BitsAreRefusedNotTruncated) {
  expect_error(run_fdpp("generate -m " + stories() + " --prompt-ids 1,4294967297 --device cpu", "id64"),
               "'4294967297' in the id list '1,4294967297' is out of range (at most 2147483647)");
  expect_error(run_fdpp("generate -m " + stories() +
                            " --prompt-ids 99999999999999999999999 --device cpu", "id128"),
               "'99999999999999999999999' in the id list '99999999999999999999999' is out of "
               "range (at most 2147483647)");
  expect_error(run_fdpp("tokenize -m " + stories() + " --decode 1,-4294967295", "idneg"),
               "'-4294967295' in the id list '1,-4294967295' is out of range (at most 2147483647)");
  const auto dir = test::scratch_dir("clin_ids");
  const std::pair<const char*, const char*> cases[] = {
      {"[[1, 4294967297]]", "4294967297"},
      {"[[1, 9223372036854775808]]", "9223372036854775808"},   // unsigned in nlohmann
      {"[[1, 18446744073709551617]]", "1.8446744073709552e+19"},  // past uint64: a double
      {"[[-1]]", "-1"}};
  for (const auto& [list, shown] : cases) {
    test::write_file(dir / "ids.json", list);
    const auto r = run_fdpp("logits -m " + stories() + " --ids " + (dir / "ids.json").string() +
                                " --out " + (dir / "out.bin").string() + " --device cpu", "idjson");
    expect_error(r, (dir / "ids.json").string() + ": id " + shown +
                        " is out of range (ids are 0 to 2147483647)");
  }
  test::write_file(dir / "ids.json", "[[1, 2.5]]");
  expect_error(run_fdpp("logits -m " + stories() + " --ids " + (dir / "ids.json").string() +
                            " --out " + (dir / "out.bin").string() + " --device cpu", "idfrac"),
               (dir / "ids.json").string() + ": ids must be integers, got 2.5");
}

TEST(CliNumbers, FloatOptionsRejectNanAndInf) {
  const std::string gen = "generate -m " + stories() + " -p hi -n 2 --device cpu ";
  expect_error(run_fdpp(gen + "--temp nan", "tnan"), "--temp: must be a finite number, got 'nan'", 2);
  expect_error(run_fdpp(gen + "--temp inf", "tinf"), "--temp: must be a finite number, got 'inf'", 2);
  expect_error(run_fdpp(gen + "--top-p nan", "pnan"), "--top-p: must be a finite number, got 'nan'", 2);
  expect_error(run_fdpp(gen + "--top-p 1e999", "pbig"),
               "--top-p: must be a finite number, got '1e999'", 2);
  expect_error(run_fdpp("calibrate -m " + stories() + " --device cpu --coverage -inf", "cov"),
               "--coverage: must be a finite number, got '-inf'", 2);
  expect_error(run_fdpp("bench-attention --phi NaN", "phi"),
               "--phi: must be a finite number, got 'NaN'", 2);
}

// CLI11's parse errors: one prefixed line, the one usage status 2 (README), never 104-114.
TEST(CliNumbers, ParseErrorsAreOneLineWithTheUsageStatus) {
  const auto check = [](const CliResult& r, const std::string& message) {
    EXPECT_FALSE(r.signaled) << r.err;
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "fdpp: error: " + message + "\n");
    EXPECT_LT(r.seconds, 2.0);
  };
  check(run_fdpp("generate --bogus", "bogus"), "The following argument was not expected: --bogus");
  check(run_fdpp("", "none"), "A subcommand is required");
  check(run_fdpp("generate -n", "noval"), "--n-predict: 1 required INT missing");
  check(run_fdpp("generate -m " + stories() + " -n lots", "conv"),
        "Could not convert: --n-predict = lots");
  check(run_fdpp("generate -m " + stories() + " -n 99999999999", "conv_big"),
        "Could not convert: --n-predict = 99999999999");
  // -v after the subcommand as before it.
  const auto after = run_fdpp("generate -m " + stories() + " -p hi -n 2 --temp 0 --device cpu -v", "v_after");
  const auto before = run_fdpp("-v generate -m " + stories() + " -p hi -n 2 --temp 0 --device cpu", "v_before");
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(after.out, before.out);
  const auto help = run_fdpp("--help", "help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("generate"), std::string::npos);
}

// The bench defaults match the README, and a length past the model's positions is refused.
TEST(CliNumbers, BenchRefusesPromptsPastTheModelsPositions) {
  expect_error(run_fdpp("bench -m " + stories() + " -p 128,1024 --device cpu", "bench_p"),
               "-p 1024 with -n 128 needs 1152 positions but " + stories() +
                   " has 512 (max_position_embeddings); give shorter -p lengths or a smaller -n");
  const auto help = run_fdpp("bench --help", "bench_help");
  EXPECT_NE(help.out.find("TEXT=128,1024 "), std::string::npos) << help.out;
}

// The messages issue 24 found misleading, each now naming what is wrong.
TEST(CliNumbers, MessagesSayWhatIsWrong) {
  const std::string S = stories();
  expect_error(run_fdpp("generate -m " + S + " -p '' --device cpu", "empty_p"),
               "--prompt: the prompt (-p) is empty", 2);
  expect_error(run_fdpp("tokenize -m " + S + " -p ''", "empty_tok"), "--prompt: the text (-p) is empty", 2);
  expect_error(run_fdpp("generate -m " + S + " -p hi --dtype xyz --device cpu", "dtype"),
               "--dtype xyz: unknown dtype (fp16, bf16 or fp32; the CPU backend runs fp32, CUDA "
               "fp16 or bf16)");
  expect_error(run_fdpp("generate -m " + S + " -p hi --dtype fp16 --device cpu", "dtype16"),
               "--dtype fp16: the CPU backend computes in fp32 only");
  expect_error(run_fdpp("tune -m " + S + " --device cpu", "tune_cpu"),
               "tune needs CUDA: it times this GPU's GEMM kernels, and --device cpu has none to time");
  expect_error(run_fdpp("info -m " + S + " --ctx -5", "ctx"),
               "--ctx: Value -5 not in range 0 to 2147483647", 2);
  expect_error(run_fdpp("generate -m " + S + " -p hi --device cpu --seed 18446744073709551616", "seed"),
               "--seed: '18446744073709551616' is past the 64-bit range (-9223372036854775808 to "
               "9223372036854775807)", 2);
  const auto info = run_fdpp("info -m " + S, "info_params");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("parameters     260 K (260032)\n"), std::string::npos) << info.out;
}

}  // namespace
}  // namespace fdpp
