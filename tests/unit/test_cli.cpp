// The fdpp binary as a user runs it: the reference text on stdout, and every
// bad input a one-line error with a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "fdpp/engine.h"

namespace fdpp {
namespace {

struct CliResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out;
  std::string err;
};

CliResult run_fdpp(const std::string& args, const std::string& tag) {
  const auto dir = test::scratch_dir("cli_" + tag);
  const std::string cmd = test::fdpp_binary().string() + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.signaled = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) >= 128);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(dir / "out");
  r.err = test::read_file(dir / "err");
  return r;
}

std::string stories() { return (test::models_dir() / "stories260K").string(); }

// A one-line "fdpp: error: ..." on stderr, exit code 1, no crash.
void expect_clean_error(const CliResult& r, const std::string& must_mention) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("fdpp: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << r.err;
}

TEST(Cli, GreedyGenerationPrintsTheReferenceText) {
  const auto ref = nlohmann::json::parse(
      test::read_file(test::models_dir() / "stories260K" / "reference" / "once_upon_a_time.json"));
  const auto r = run_fdpp("generate -m " + stories() + " -p 'Once upon a time' -n 60 --temp 0 --device cpu", "ref");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ref["greedy_text"].get<std::string>() + "\n");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST(Cli, JsonOutputHasIdsTextAndTiming) {
  const auto r = run_fdpp("generate -m " + stories() + " -p 'Once upon a time' -n 8 --temp 0 --device cpu --json",
                          "json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int>>(), (std::vector<int>{1, 403, 407, 261, 378}));
  EXPECT_EQ(j["generated_ids"].size(), 8u);
  EXPECT_EQ(j["text"].get<std::string>().rfind(", there was", 0), 0u);
  EXPECT_GT(j["timing"]["decode_tokens_per_s"].get<double>(), 0.0);
}

TEST(Cli, PromptIdsWorkWithoutATokenizer) {
  const auto dir = test::scratch_dir("cli_notok_model");
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(test::models_dir() / "stories260K" / f, dir / f);
  const auto r = run_fdpp("generate -m " + dir.string() + " --prompt-ids 1,403,407,261,378 -n 4 --temp 0 --device cpu",
                          "notok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "432 383 286 261 \n");  // the reference's next four ids
  const auto t = run_fdpp("generate -m " + dir.string() + " -p hello --device cpu", "notok_text");
  expect_clean_error(t, "--prompt-ids");
}

TEST(Cli, TokenizeAndDecode) {
  const auto r = run_fdpp("tokenize -m " + stories() + " -p 'Once upon a time'", "tok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1,403,407,261,378\n");
  const auto d = run_fdpp("tokenize -m " + stories() + " --decode 1,403,407,261,378", "detok");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "Once upon a time\n");
  expect_clean_error(run_fdpp("tokenize -m " + stories() + " --decode 1,9999", "detok_bad"), "9999");
}

TEST(Cli, InfoListsTheGemmShapes) {
  const auto r = run_fdpp("info -m " + stories() + " --json", "info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["heads"], 8);
  EXPECT_EQ(j["kv_heads"], 4);
  std::vector<std::pair<int, int>> shapes;
  for (const auto& s : j["gemm_shapes"]) shapes.emplace_back(s["n"], s["k"]);
  // qkv (8+2*4)*8 x 64, o 64 x 64, gate|up 2*172 x 64, down 64 x 172, lm_head 512 x 64
  EXPECT_EQ(shapes, (std::vector<std::pair<int, int>>{{128, 64}, {64, 64}, {344, 64}, {64, 172}, {512, 64}}));
  // embed 512*64 + 5 layers * (2*64 + 128*64 + 64*64 + 344*64 + 64*172) + 64; tied head counted once
  EXPECT_EQ(j["parameters"].get<int64_t>(), 260032);
}

TEST(Cli, BadInputsAreOneLineErrors) {
  expect_clean_error(run_fdpp("generate -m /nonexistent/model -p hi --device cpu", "nomodel"), "/nonexistent/model");

  const auto dir = test::scratch_dir("cli_corrupt_model");
  for (const auto& f : std::filesystem::directory_iterator(test::models_dir() / "stories260K"))
    if (f.is_regular_file()) std::filesystem::copy_file(f.path(), dir / f.path().filename());
  std::filesystem::permissions(dir / "model.safetensors", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  test::write_file(dir / "model.safetensors", "\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}");
  expect_clean_error(run_fdpp("generate -m " + dir.string() + " -p hi --device cpu", "corrupt"), "model.safetensors");

  expect_clean_error(run_fdpp("generate -m " + stories() + " -p 'Once upon a time there was a girl' --ctx 4 --device cpu",
                              "toolong"),
                     "context of 4");
  expect_clean_error(run_fdpp("generate -m " + stories() + " --prompt-ids 1,600 --device cpu", "badid"), "600");
  expect_clean_error(run_fdpp("generate -m " + stories() + " --prompt-ids 1,x --device cpu", "badlist"), "'x'");
  expect_clean_error(run_fdpp("generate -m " + stories() + " -p hi -n 0 --device cpu", "n0"), "-n");
  const auto no_args = run_fdpp("generate", "noargs");
  EXPECT_NE(no_args.exit_code, 0);
  EXPECT_FALSE(no_args.signaled);
}


// The GPU commands on a machine without a usable GPU (CI): one clear line, no crash. On the
// GPU machine they run instead, which gpu_check.sh covers.
TEST(Cli, GpuCommandsWithoutAGpuAreOneLineErrors) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: these commands would run";
  expect_clean_error(run_fdpp("tune -m " + stories(), "tune"), "CUDA");
  expect_clean_error(run_fdpp("bench-gemm", "bench_gemm"), "CUDA");
  expect_clean_error(run_fdpp("bench-attention", "bench_attention"), "CUDA");
  expect_clean_error(run_fdpp("bench -m " + stories() + " --device cuda", "bench_cuda"), "CUDA");
  expect_clean_error(run_fdpp("generate -m " + stories() + " -p hi --device cuda", "gen_cuda"), "CUDA");
  expect_clean_error(run_fdpp("calibrate -m " + stories() + " --device cuda", "cal_cuda"), "CUDA");
}

}  // namespace
}  // namespace fdpp
