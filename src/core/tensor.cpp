#include "core/tensor.h"

#include <cassert>
#include <cstdlib>

#include <fmt/format.h>

namespace fdpp {

const char* device_name(Device d) { return d == Device::kCUDA ? "cuda" : "cpu"; }

Shape::Shape(std::initializer_list<int64_t> d) {
  assert(d.size() <= kMaxRank);
  for (int64_t v : d) dims[rank++] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != o.dims[i]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += fmt::format("{}{}", i ? ", " : "", dims[i]);
  return s + "]";
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  assert(rank() >= 1 && 0 <= begin && begin <= end && end <= shape[0]);
  Shape s = shape;
  s.dims[0] = end - begin;
  const int64_t row_elems = shape[0] ? numel() / shape[0] : 0;
  char* base = static_cast<char*>(data) + static_cast<size_t>(begin * row_elems) * dtype_size(dtype);
  return {base, dtype, device, s};
}

Tensor Tensor::view(Shape s) const {
  assert(s.numel() == numel());
  return {data, dtype, device, s};
}

std::string Tensor::describe() const {
  return fmt::format("{}{} on {}", dtype_name(dtype), shape.to_string(), device_name(device));
}

Tensor Buffer::as(DType t, Shape s) const {
  assert(static_cast<size_t>(s.numel()) * dtype_size(t) <= bytes_);
  return {data(), t, device_, s};
}

Result<Buffer> host_alloc(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) return OutOfMemory(fmt::format("host allocation of {} bytes failed", bytes));
  return Buffer(p, bytes, Device::kCPU, [](void* q) { std::free(q); });
}

}  // namespace fdpp
