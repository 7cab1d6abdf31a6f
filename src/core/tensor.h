// Tensor: a non-owning view of a dense, row-major array (PyTorch order: the
// last dimension is contiguous). Memory is owned by a Buffer (host or device);
// a Tensor never frees anything, so views can be copied freely.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp {

enum class Device : uint8_t { kCPU, kCUDA };
const char* device_name(Device d);

constexpr int kMaxRank = 4;

struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);

  int64_t operator[](int i) const { return dims[i]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string to_string() const;  // "[4096, 11008]"
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kCPU;
  Shape shape;

  Tensor() = default;
  Tensor(void* d, DType t, Device dev, Shape s) : data(d), dtype(t), device(dev), shape(s) {}

  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int64_t size(int i) const { return shape[i]; }
  int rank() const { return shape.rank; }
  bool empty() const { return data == nullptr; }

  template <class T>
  T* ptr() const { return static_cast<T*>(data); }

  // Rows [begin, end) of the first dimension; still contiguous.
  Tensor rows(int64_t begin, int64_t end) const;
  // The same memory seen with another shape of equal element count.
  Tensor view(Shape s) const;
  std::string describe() const;  // "f16[32, 4096] on cuda"
};

// Owning memory: a pointer with the deleter of whoever allocated it
// (std::free on the host, cudaFree on the device).
class Buffer {
 public:
  Buffer() = default;
  Buffer(void* p, size_t bytes, Device dev, std::function<void(void*)> deleter)
      : ptr_(p, std::move(deleter)), bytes_(bytes), device_(dev) {}

  void* data() const { return ptr_.get(); }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  // A tensor view of the start of this buffer.
  Tensor as(DType t, Shape s) const;

 private:
  std::unique_ptr<void, std::function<void(void*)>> ptr_{nullptr, [](void*) {}};
  size_t bytes_ = 0;
  Device device_ = Device::kCPU;
};

// A host buffer, 64-byte aligned; OutOfMemory names the size that failed.
Result<Buffer> host_alloc(size_t bytes);

}  // namespace fdpp
