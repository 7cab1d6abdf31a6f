// Writes the embedded stories260K folder into the cache once, so the engine loads it like any
// other folder (mmap of model.safetensors, SentencePiece reading tokenizer.model from a path)
// instead of growing a second, in-memory loading path for one small model.
#include "fdpp/embedded_model.h"

#include <unistd.h>

#include <fstream>
#include <random>
#include <string>
#include <system_error>

#include "tuning/gemm_table_files.h"  // fdpp_cache_dir

namespace fdpp {
namespace fs = std::filesystem;

namespace {

// Every embedded file is there with its size. The folder name carries the content hash, so
// equal sizes mean equal bytes unless someone edited a file by hand; a missing or truncated
// file (a disk that filled up, a partial copy) makes the folder be written again.
bool folder_complete(const fs::path& dir) {
  for (const EmbeddedFile& f : embedded_model_files()) {
    std::error_code ec;
    const auto size = fs::file_size(dir / f.name, ec);
    if (ec || size != f.bytes.size()) return false;
  }
  return true;
}

Status write_files(const fs::path& dir) {
  for (const EmbeddedFile& f : embedded_model_files()) {
    std::ofstream out(dir / f.name, std::ios::binary | std::ios::trunc);
    out.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
    out.close();
    if (!out) return IoError("writing the embedded model: cannot write " + (dir / f.name).string());
  }
  return Status::Ok();
}

}  // namespace

const char* embedded_model_name() { return "stories260K"; }

Result<fs::path> materialize_embedded_model(const fs::path& cache_dir) {
  const fs::path root = (cache_dir.empty() ? fdpp_cache_dir() : cache_dir) / "models";
  const std::string name = std::string(embedded_model_name()) + "-" +
                           std::string(embedded_model_hash()).substr(0, 16);
  const fs::path dir = root / name;
  if (folder_complete(dir)) return dir;

  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return IoError("writing the embedded model: cannot create " + root.string() + ": " + ec.message());
  // Unique per process and call: two processes starting at once each write their own copy,
  // and the first rename wins.
  std::random_device rd;
  const fs::path tmp = root / ("." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
                               std::to_string(rd()));
  if (!fs::create_directory(tmp, ec) || ec)
    return IoError("writing the embedded model: cannot create " + tmp.string() + ": " + ec.message());
  if (Status s = write_files(tmp); !s.ok()) {
    fs::remove_all(tmp, ec);
    return s;
  }
  // A stale, incomplete folder under the final name blocks the rename (a directory is only
  // replaced when empty): it goes first.
  if (fs::exists(dir, ec) && !folder_complete(dir)) fs::remove_all(dir, ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    if (folder_complete(dir)) return dir;  // another process renamed its copy first
    return IoError("writing the embedded model: cannot rename " + tmp.string() + " to " + dir.string() +
                   ": " + ec.message());
  }
  return dir;
}

}  // namespace fdpp
