// Embedding lookup: out[t, :] = table[ids[t], :]. A pure copy of rows, so the
// kernel moves bytes, not numbers: 16-byte units when rows and pointers allow,
// single elements otherwise.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (token, column block). U: the copy unit (uint4, or the 16-bit element as uint16_t).
template <class U>
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const int32_t* ids /* (T) */, const U* table /* (V, units) */,
                     U* out /* (T, units) */, int64_t vocab, int64_t units) {
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (c >= units) return;
  const int32_t id = ids[t];
  U v{};  // zeros for an id outside the table: never read out of bounds
  if (id >= 0 && id < vocab) v = table[static_cast<int64_t>(id) * units + c];
  out[t * units + c] = v;
}

template <class U>
Status launch(const EmbeddingParams& p, int64_t units, KernelStream stream) {
  const int64_t col_blocks = (units + kThreads - 1) / kThreads;
  if (p.n_tokens > 0x7fffffff || col_blocks > 65535)
    return OutOfRange("embedding: " + std::to_string(p.n_tokens) + " tokens x " +
                      std::to_string(p.hidden) + " hidden exceed the grid");
  const dim3 grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(col_blocks));
  FDPP_KERNEL_CHECK(launch_kernel(embedding_kernel<U>, grid, kThreads, 0, stream, p.ids,
                                  static_cast<const U*>(p.table), static_cast<U*>(p.out), p.vocab,
                                  units));
  return Status::Ok();
}

}  // namespace

Status run_embedding(const EmbeddingParams& p, DType dtype, KernelStream stream) {
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return Unsupported(std::string("embedding: dtype ") + dtype_name(dtype));
  if (p.n_tokens <= 0 || p.hidden <= 0) return Status::Ok();
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const int64_t row_bytes = p.hidden * 2;
  if (row_bytes % 16 == 0 && addr(p.table) % 16 == 0 && addr(p.out) % 16 == 0)
    return launch<uint4>(p, row_bytes / 16, stream);
  return launch<uint16_t>(p, p.hidden, stream);
}

}  // namespace fdpp::cuda
