#include "common/safetensors_writer.h"

#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "core/half.h"
#include "common/test_util.h"

namespace fdpp::test {

std::string make_safetensors_raw(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string make_safetensors(const std::vector<WriterTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const WriterTensor& t : tensors) {
    const size_t begin = data.size();
    data += t.bytes;
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  return make_safetensors_raw(text, data);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<WriterTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file(path, make_safetensors(tensors, metadata));
}

namespace {

template <class T>
std::string to_bytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::vector<uint16_t> to_16(const std::vector<float>& values, uint16_t (*cvt)(float)) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = cvt(values[i]);
  return out;
}

}  // namespace

WriterTensor f32_tensor(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values) {
  return {name, "F32", shape, to_bytes(values)};
}

WriterTensor f16_tensor(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values) {
  return {name, "F16", shape, to_bytes(to_16(values, f32_to_f16))};
}

WriterTensor bf16_tensor(const std::string& name, const std::vector<int64_t>& shape,
                         const std::vector<float>& values) {
  return {name, "BF16", shape, to_bytes(to_16(values, f32_to_bf16))};
}

std::vector<float> random_values(size_t n, uint64_t seed, float scale) {
  // mt19937_64's output is fixed by the standard; uniform_real_distribution's is
  // not, so the float is built by hand to give the same model on every toolchain.
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) {
    const float u = static_cast<float>(rng() >> 40) * (1.0f / 16777216.0f);  // [0, 1), exact
    x = scale * (2.0f * u - 1.0f);
  }
  return v;
}

}  // namespace fdpp::test
