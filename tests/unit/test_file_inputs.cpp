// Files fdpp reads, at the library level: only regular files are opened, and the check
// cannot hang on a FIFO. (issue 24, item 4)
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "common/test_util.h"
#include "core/regular_file.h"
#include "model/safetensors.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

fs::path fifo(const fs::path& p) {
  EXPECT_EQ(::mkfifo(p.c_str(), 0644), 0) << p;
  return p;
}

TEST(RegularFile, RefusesDirectoriesFifosAndMissingFilesAtOnce) {
  const fs::path dir = test::scratch_dir("regular_file_kinds");
  const fs::path f = fifo(dir / "fifo");
  const auto t0 = Clock::now();
  auto r = read_regular_file(f);
  EXPECT_LT(seconds_since(t0), 2.0);  // a plain open(2) of a FIFO blocks until a writer comes
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(r.status().message(),
            "cannot open '" + f.string() + "': not a regular file (a FIFO, socket or device)");
  auto d = read_regular_file(dir);
  EXPECT_EQ(d.status().code(), StatusCode::kIoError);
  EXPECT_EQ(d.status().message(), "cannot open '" + dir.string() + "': Is a directory");
  auto m = read_regular_file(dir / "missing");
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message(),
            "cannot open '" + (dir / "missing").string() + "': No such file or directory");
  test::write_file(dir / "ok", "bytes");
  auto ok = read_regular_file(dir / "ok");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, "bytes");
}

// A FIFO as the weights, a shard or the shard index: an error naming it, at once.
TEST(RegularFile, SafetensorsFifosAreRefused) {
  const fs::path dir = test::scratch_dir("st_fifos");
  fs::create_directories(dir / "single");
  const fs::path single = fifo(dir / "single" / "model.safetensors");
  auto t0 = Clock::now();
  auto a = SafetensorsModel::open(dir / "single");
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(a.status().message(),
            "cannot open '" + single.string() + "': not a regular file (a FIFO, socket or device)");

  fs::create_directories(dir / "index");
  const fs::path index = fifo(dir / "index" / "model.safetensors.index.json");
  t0 = Clock::now();
  auto b = SafetensorsModel::open(dir / "index");
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(b.status().message(),
            "cannot open '" + index.string() + "': not a regular file (a FIFO, socket or device)");

  fs::create_directories(dir / "shard");
  test::write_file(dir / "shard" / "model.safetensors.index.json",
                   R"({"weight_map": {"w": "part-1.safetensors"}})");
  const fs::path shard = fifo(dir / "shard" / "part-1.safetensors");
  t0 = Clock::now();
  auto c = SafetensorsModel::open(dir / "shard");
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(c.status().message(),
            (dir / "shard" / "model.safetensors.index.json").string() +
                ": shard 'part-1.safetensors' (holding 'w'): cannot open '" + shard.string() +
                "': not a regular file (a FIFO, socket or device)");
}

}  // namespace
}  // namespace fdpp
