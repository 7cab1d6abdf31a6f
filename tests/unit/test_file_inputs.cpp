// Files fdpp reads and writes, at the library level: only regular files are opened, and the
// check cannot hang on a FIFO; cache files are replaced atomically even with two writers; a
// checkpoint truncated during the load is an error, not a SIGBUS; calibration follows the
// one cache-directory rule. (issue 24, items 4, 7, 8, 12)
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/safetensors_writer.h"
#include "common/test_util.h"
#include "core/regular_file.h"
#include "fdpp/engine.h"
#include "model/safetensors.h"
#include "tuning/calibration.h"

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

// Sets (or, with nullptr, unsets) an environment variable for one scope.
struct EnvGuard {
  std::string name;
  std::string old;
  bool had;
  EnvGuard(const char* n, const char* v) : name(n), had(std::getenv(n) != nullptr) {
    if (had) old = std::getenv(n);
    if (v) setenv(n, v, 1);
    else unsetenv(n);
  }
  ~EnvGuard() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

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

// The checkpoint shrinks between the header read and the copy of the weights: the copy
// reads with pread, so it ends in an error instead of a SIGBUS from the mapping.
TEST(Safetensors, TruncatedAfterOpenIsAnErrorNotSigbus) {
  const fs::path dir = test::scratch_dir("st_truncated");
  const fs::path p = dir / "model.safetensors";
  const int64_t n = 1 << 20;  // 4 MB: many pages past the cut
  test::write_safetensors(p, {test::f32_tensor("w", {n}, test::random_values(n, 7))});
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorInfo* w = f->find("w");
  ASSERT_NE(w, nullptr);
  const uint64_t begin = static_cast<uint64_t>(fs::file_size(p)) - w->nbytes;
  fs::resize_file(p, begin + 4096);
  std::vector<float> out(n);
  const std::string expected = p.string() + ": tensor 'w' ends at byte " +
                               std::to_string(begin + w->nbytes) + ", but the file now ends at byte " +
                               std::to_string(begin + 4096) + ": it was truncated after it was opened";
  for (DType target : {DType::kF32, DType::kF16}) {  // the copy and the converting path
    Status s = convert_tensor(*w, target, out.data());
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.to_string();
    EXPECT_EQ(s.message(), expected);
  }
}

Calibration calibration_with(const std::string& fingerprint, int layers) {
  Calibration c;
  c.fingerprint = fingerprint;
  c.num_layers = layers;
  c.num_heads = 8;
  c.num_kv_heads = 4;
  c.head_dim = 8;
  c.layers.resize(layers);
  return c;
}

// Two `fdpp calibrate` processes writing one file: every read sees one writer's whole file,
// never an interleaving, and no temporary file is left behind.
TEST(Calibration, TwoConcurrentWritersNeverTearTheFile) {
  const fs::path dir = test::scratch_dir("calibration_two_writers");
  const fs::path path = dir / "fdpp_calibration.json";
  // Big enough that one write(2) of it is several, so a shared temporary would interleave.
  const Calibration a = calibration_with("aaaaaaaaaaaaaaaa", 3000);
  const Calibration b = calibration_with("bbbbbbbbbbbbbbbb", 2000);
  ASSERT_TRUE(save_calibration(a, path).ok());
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      for (int i = 0; i < 40; ++i)
        if (!save_calibration(k == 0 ? a : b, path).ok()) ::_exit(2);
      ::_exit(0);
    }
  }
  int reads = 0;
  bool done[2] = {false, false};
  while (!done[0] || !done[1]) {
    auto c = load_calibration(path);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_TRUE(c->fingerprint == a.fingerprint || c->fingerprint == b.fingerprint);
    EXPECT_EQ(c->num_layers, c->fingerprint == a.fingerprint ? 3000 : 2000);
    ++reads;
    for (int k = 0; k < 2; ++k) {
      int status = 0;
      if (!done[k] && ::waitpid(kids[k], &status, WNOHANG) == kids[k]) {
        done[k] = true;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << k;
      }
    }
  }
  EXPECT_GT(reads, 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "fdpp_calibration.json") << "left behind: " << e.path();
  }
  EXPECT_EQ(files, 1);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // not mkstemp's private 0600
}

// Calibration follows the one cache-directory rule (fdpp_cache_dir) like the GEMM tables.
TEST(Calibration, CachePathFollowsFdppCacheDir) {
  EnvGuard a("FDPP_CACHE_DIR", "/tmp/fdpp-cache"), b("XDG_CACHE_HOME", "/tmp/xdg");
  EXPECT_EQ(calibration_path_in_cache("ab"), fs::path("/tmp/fdpp-cache/calibration/ab.json"));
  EnvGuard c("FDPP_CACHE_DIR", nullptr);
  EXPECT_EQ(calibration_path_in_cache("ab"), fs::path("/tmp/xdg/fdpp/calibration/ab.json"));
}

// A cached calibration the engine cannot read (a torn file, a FIFO in its place) counts as
// absent, with a warning: it must not fail every later run until someone deletes it.
TEST(Calibration, UnreadableCacheFileIsAbsent) {
  const fs::path dir = test::scratch_dir("calibration_unreadable");
  const fs::path src = test::models_dir() / "stories260K";
  fs::create_directories(dir / "model");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors",
                        "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"})
    fs::copy_file(src / f, dir / "model" / f);
  EnvGuard cache("FDPP_CACHE_DIR", (dir / "cache").c_str());
  auto fp = model_fingerprint(dir / "model");
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  const fs::path cached = calibration_path_in_cache(*fp);
  ASSERT_EQ(cached.parent_path(), dir / "cache" / "calibration");
  EngineOptions o;
  o.model_dir = dir / "model";
  o.softmax = "unified";
  for (int kind = 0; kind < 2; ++kind) {
    fs::create_directories(cached.parent_path());
    fs::remove(cached);
    if (kind == 0) test::write_file(cached, "{\"format\": \"fdpp-softmax-calib");  // torn
    else fifo(cached);
    for (const fs::path& p : {cached, calibration_path_in_model(o.model_dir)}) {
      if (p != cached) {  // the same in the model folder
        fs::remove(cached);
        if (kind == 0) test::write_file(p, "{");
        else fifo(p);
      }
      const auto t0 = Clock::now();
      auto e = Engine::create(o);
      EXPECT_LT(seconds_since(t0), 2.0);
      ASSERT_TRUE(e.ok()) << e.status().to_string();
      auto st = (*e)->softmax_stats();
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(st->phi_source, "default 0") << p;
      fs::remove(p);
    }
  }
}

}  // namespace
}  // namespace fdpp
