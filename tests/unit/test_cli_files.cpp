// The fdpp binary on paths a user gives it: a directory, a FIFO or a missing file is one
// "fdpp: error: ..." line, exit status 1, at once (never a hang, an escaping exception or
// silently empty input); a model folder whose files are FIFOs likewise; and prompts come
// from --prompt-file FILE or standard input (-). (issue 24, items 1, 4, 11)
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/test_util.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1;
  bool signaled = false;
  double seconds = 0;
  std::string out;
  std::string err;
};

// `timeout` turns a hang into exit status 124 (a failure here) instead of a stuck suite.
CliResult run_fdpp(const std::string& args, const std::string& tag, const std::string& stdin_file = "/dev/null") {
  const auto dir = test::scratch_dir("cli_files_" + tag);
  const std::string cmd = "timeout 10 " + test::fdpp_binary().string() + " " + args + " <" + stdin_file + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.signaled = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) >= 124);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(dir / "out");
  r.err = test::read_file(dir / "err");
  return r;
}

std::string stories() { return (test::models_dir() / "stories260K").string(); }

// Exactly the line "fdpp: error: <message>", exit status 1, no signal, under 2 s.
void expect_error(const CliResult& r, const std::string& message) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "fdpp: error: " + message + "\n");
  EXPECT_LT(r.seconds, 2.0);
}

std::string not_regular(const fs::path& p) {
  return "cannot open '" + p.string() + "': not a regular file (a FIFO, socket or device)";
}

fs::path fifo(const fs::path& p) {
  EXPECT_EQ(::mkfifo(p.c_str(), 0644), 0) << p;
  return p;
}

TEST(CliFiles, DirectoriesGivenAsFilesAreOneError) {
  const fs::path dir = test::scratch_dir("cli_files_dirs");
  const std::string d = dir.string();
  const std::string is_dir = "cannot open '" + d + "': Is a directory";
  expect_error(run_fdpp("logits -m " + stories() + " --ids " + d + " --out " + d + "/x --device cpu", "dir_ids"),
               "--ids: " + is_dir);
  expect_error(run_fdpp("tokenize -m " + stories() + " --input-jsonl " + d, "dir_jsonl"), "--input-jsonl: " + is_dir);
  expect_error(run_fdpp("tokenize -m " + stories() + " --prompt-file " + d, "dir_tok"), "--prompt-file: " + is_dir);
  expect_error(run_fdpp("generate -m " + stories() + " --prompt-file " + d + " --device cpu", "dir_gen"),
               "--prompt-file: " + is_dir);
}

TEST(CliFiles, FifosAndMissingFilesGivenAsFilesAreOneError) {
  const fs::path dir = test::scratch_dir("cli_files_fifos");
  const fs::path f = fifo(dir / "fifo");
  expect_error(run_fdpp("logits -m " + stories() + " --ids " + f.string() + " --out " + (dir / "x").string() +
                            " --device cpu",
                        "fifo_ids"),
               "--ids: " + not_regular(f));
  expect_error(run_fdpp("tokenize -m " + stories() + " --input-jsonl " + f.string(), "fifo_jsonl"),
               "--input-jsonl: " + not_regular(f));
  expect_error(run_fdpp("generate -m " + stories() + " --prompt-file " + f.string() + " --device cpu", "fifo_gen"),
               "--prompt-file: " + not_regular(f));
  const fs::path missing = dir / "missing.txt";
  expect_error(run_fdpp("tokenize -m " + stories() + " --prompt-file " + missing.string(), "missing"),
               "--prompt-file: cannot open '" + missing.string() + "': No such file or directory");
}

// A copy of stories260K in which `name` is a FIFO.
fs::path stories_with_fifo(const std::string& tag, const std::string& name) {
  const fs::path dir = test::scratch_dir("cli_files_model_" + tag) / "model";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.model",
                        "tokenizer_config.json", "special_tokens_map.json"})
    if (name != f) fs::copy_file(fs::path(stories()) / f, dir / f);
  fifo(dir / name);
  return dir;
}

TEST(CliFiles, ModelFolderFifosAreOneError) {
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    const fs::path m = stories_with_fifo(name, name);
    expect_error(run_fdpp("tokenize -m " + m.string() + " -p hello", name), not_regular(m / name));
  }
  const fs::path m = stories_with_fifo("weights", "model.safetensors");
  expect_error(run_fdpp("generate -m " + m.string() + " -p hello -n 1 --device cpu", "weights"),
               not_regular(m / "model.safetensors"));
}

// A FIFO where the engine looks for a calibration by itself is a cache entry it cannot read:
// skipped with a warning, and the run goes on.
TEST(CliFiles, CalibrationFifoIsSkippedWithAWarning) {
  const fs::path m = stories_with_fifo("calibration", "fdpp_calibration.json");
  const auto r = run_fdpp("generate -m " + m.string() + " -p hello -n 2 --temp 0 --device cpu --softmax unified",
                          "calibration");
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 2.0);
  EXPECT_NE(r.err.find("calibration: " + not_regular(m / "fdpp_calibration.json") +
                       "; ignored: run fdpp calibrate again"),
            std::string::npos)
      << r.err;
}

TEST(CliFiles, PromptFileAndStandardInput) {
  const fs::path dir = test::scratch_dir("cli_files_prompt");
  const std::string p = (dir / "prompt.txt").string();
  test::write_file(p, "Once upon a time");
  const std::string gen = " -n 8 --temp 0 --device cpu";
  const auto ref = run_fdpp("generate -m " + stories() + " -p 'Once upon a time'" + gen, "gen_ref");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  ASSERT_FALSE(ref.out.empty());
  const auto file = run_fdpp("generate -m " + stories() + " --prompt-file " + p + gen, "gen_file");
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, ref.out);
  const auto in = run_fdpp("generate -m " + stories() + " --prompt-file -" + gen, "gen_stdin", p);
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.out, ref.out);

  const auto tref = run_fdpp("tokenize -m " + stories() + " -p 'Once upon a time'", "tok_ref");
  ASSERT_EQ(tref.exit_code, 0) << tref.err;
  EXPECT_EQ(run_fdpp("tokenize -m " + stories() + " --prompt-file " + p, "tok_file").out, tref.out);
  EXPECT_EQ(run_fdpp("tokenize -m " + stories() + " --prompt-file -", "tok_stdin", p).out, tref.out);

  // A prompt past the kernel's argument limit (about 128 KB per argument) through a file.
  std::string big;
  while (big.size() < (1u << 20)) big += "Once upon a time there was a little girl. ";
  test::write_file(dir / "big.txt", big);
  const auto r = run_fdpp("tokenize -m " + stories() + " --prompt-file -", "tok_big", (dir / "big.txt").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(std::count(r.out.begin(), r.out.end(), ','), 100000) << r.out.substr(0, 200);

  // logits --ids - : the id lists from standard input.
  test::write_file(dir / "ids.json", "[[1, 403, 407]]");
  const std::string out = (dir / "logits.bin").string();
  const auto l = run_fdpp("logits -m " + stories() + " --ids - --out " + out + " --device cpu", "logits_stdin",
                          (dir / "ids.json").string());
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(fs::file_size(out), 3u * 512u * sizeof(float));
  EXPECT_NE(l.out.find("\"lengths\":[3]"), std::string::npos) << l.out;

  test::write_file(dir / "empty.txt", "");
  expect_error(run_fdpp("generate -m " + stories() + " --prompt-file " + (dir / "empty.txt").string() + gen,
                        "gen_empty"),
               "--prompt-file " + (dir / "empty.txt").string() + " is empty");
  expect_error(run_fdpp("generate -m " + stories() + " -p hi --prompt-file " + p + gen, "gen_both"),
               "give the prompt text with -p or --prompt-file, not both");
}

}  // namespace
}  // namespace fdpp
