// The model built into the binary: the same bytes as models/stories260K, written once into the
// cache, and `fdpp generate` without -m prints what it prints with -m models/stories260K.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>

#include "common/test_util.h"
#include "fdpp/embedded_model.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;

TEST(EmbeddedModel, FilesAreTheRepositoryCopy) {
  const auto src = test::models_dir() / "stories260K";
  ASSERT_FALSE(embedded_model_files().empty());
  bool has_weights = false;
  for (const EmbeddedFile& f : embedded_model_files()) {
    EXPECT_EQ(test::read_file(src / f.name), f.bytes) << f.name;
    has_weights |= f.name == "model.safetensors";
  }
  EXPECT_TRUE(has_weights);
  EXPECT_EQ(std::string(embedded_model_hash()).size(), 64u);
}

TEST(EmbeddedModel, WrittenOnceUnderAHashedNameAndRewrittenWhenIncomplete) {
  const auto cache = test::scratch_dir("embedded_cache");
  auto dir = materialize_embedded_model(cache);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  EXPECT_EQ(dir->parent_path(), cache / "models");
  EXPECT_EQ(dir->filename().string(),
            std::string("stories260K-") + std::string(embedded_model_hash()).substr(0, 16));
  for (const EmbeddedFile& f : embedded_model_files())
    EXPECT_EQ(test::read_file(*dir / f.name), f.bytes) << f.name;
  // Nothing but the model folder is left beside it (the temporary copy was renamed).
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache / "models")) ++entries;
  EXPECT_EQ(entries, 1);

  // A second call finds the folder: a marker file written into it survives.
  test::write_file(*dir / "marker", "x");
  auto again = materialize_embedded_model(cache);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(*again, *dir);
  EXPECT_TRUE(fs::exists(*dir / "marker"));

  // A truncated weights file makes it write the folder again.
  test::write_file(*dir / "model.safetensors", "short");
  auto fixed = materialize_embedded_model(cache);
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_EQ(*fixed, *dir);
  EXPECT_EQ(fs::file_size(*dir / "model.safetensors"),
            test::read_file(test::models_dir() / "stories260K" / "model.safetensors").size());
  EXPECT_FALSE(fs::exists(*dir / "marker"));
}

std::string run_generate(const std::string& model_arg, const fs::path& cache, const std::string& tag) {
  const auto dir = test::scratch_dir("embedded_cli_" + tag);
  const std::string cmd = "FDPP_CACHE_DIR=" + cache.string() + " " + test::fdpp_binary().string() +
                          " generate " + model_arg +
                          " -p 'Once upon a time' -n 16 --temp 0 --device cpu >" + (dir / "out").string() +
                          " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::read_file(dir / "err");
  return test::read_file(dir / "out");
}

TEST(EmbeddedModel, GenerateWithoutModelMatchesTheFolder) {
  const auto cache = test::scratch_dir("embedded_cli_cache");
  const std::string with_m = run_generate("-m " + (test::models_dir() / "stories260K").string(), cache, "m");
  const std::string without_m = run_generate("", cache, "embedded");
  EXPECT_FALSE(with_m.empty());
  EXPECT_EQ(without_m, with_m);
  EXPECT_EQ(without_m.rfind("Once upon a time", 0), 0u) << without_m;
  EXPECT_TRUE(fs::is_directory(cache / "models" /
                               (std::string("stories260K-") + std::string(embedded_model_hash()).substr(0, 16))));
}

}  // namespace
}  // namespace fdpp
