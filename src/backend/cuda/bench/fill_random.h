// Random 16-bit test data written on the device (benchmarks must never time
// zeros, and uploading gigabytes of weight copies from the host would dominate).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

// data[i] = uniform in [-scale, scale), rounded to dtype (f16 or bf16), a pure
// function of (seed, i): the same bytes on every run. Stream-ordered.
Status fill_random(void* data, size_t count, DType dtype, float scale, uint64_t seed,
                   cudaStream_t stream);

}  // namespace fdpp::cuda
