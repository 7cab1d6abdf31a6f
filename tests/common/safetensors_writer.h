// A minimal safetensors writer for tests: builds valid files (tiny random
// models) and, through make_safetensors_raw, deliberately broken ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fdpp::test {

struct WriterTensor {
  std::string name;
  std::string dtype;           // safetensors spelling: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // written as given, so tests can write invalid shapes
  std::string bytes;           // raw little-endian data; its size sets data_offsets
};

// The whole file: tensors laid out back to back in the given order, the header
// padded with spaces to a multiple of 8 bytes as the reference writer does (so
// the data region, and every tensor of 8-byte-multiple size, stays aligned).
std::string make_safetensors(const std::vector<WriterTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

// 8-byte little-endian length of `header`, `header` verbatim (no padding, no
// checks), then `data`: for files with hand-written, possibly invalid, headers.
std::string make_safetensors_raw(const std::string& header, const std::string& data);

// make_safetensors written to `path`.
void write_safetensors(const std::filesystem::path& path, const std::vector<WriterTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Values are rounded to the target type with core/half.h (round to nearest even).
WriterTensor f32_tensor(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values);
WriterTensor f16_tensor(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values);
WriterTensor bf16_tensor(const std::string& name, const std::vector<int64_t>& shape,
                         const std::vector<float>& values);

// Deterministic values in [-scale, scale), for random-weight models.
std::vector<float> random_values(size_t n, uint64_t seed, float scale = 1.0f);

}  // namespace fdpp::test
