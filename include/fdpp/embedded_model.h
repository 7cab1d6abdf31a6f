// The model built into the binary: stories260K (Karpathy's tinyllamas, 5 layers, vocab 512),
// so `fdpp generate` runs on a fresh clone with no model folder beside it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "fdpp/status.h"

namespace fdpp {

// One file of the embedded Hugging Face folder: its name and its bytes, as in models/stories260K.
struct EmbeddedFile {
  std::string_view name;
  std::string_view bytes;
};

// The folder's files (config, weights, tokenizer), in the binary's read-only data.
std::span<const EmbeddedFile> embedded_model_files();
// SHA-256 (hex) over the files' names and contents, computed when the binary was built.
const char* embedded_model_hash();
// "stories260K".
const char* embedded_model_name();

// A folder that holds the embedded model, ready for EngineOptions::model_dir:
// <cache_dir>/models/stories260K-<first 16 hex digits of the hash>. Written on the first call
// (into a fresh temporary folder beside it, then renamed into place, so a concurrent
// process never sees half a model); later calls, and other binaries with the same bytes, find
// it there. cache_dir empty: $FDPP_CACHE_DIR, else $XDG_CACHE_HOME/fdpp, else ~/.cache/fdpp.
Result<std::filesystem::path> materialize_embedded_model(const std::filesystem::path& cache_dir = {});

}  // namespace fdpp
