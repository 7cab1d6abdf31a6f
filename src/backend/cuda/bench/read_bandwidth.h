// The device's streaming-read bandwidth, measured the way fdpp's kernels read
// weights and KV cache (16-byte loads, several in flight per thread). fdpp bench
// reports every decode step against this figure, measured in the same run.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "fdpp/status.h"

namespace fdpp::cuda {

struct ReadBandwidth {
  double gbs = 0;       // median over the repetitions, 1e9 bytes/s
  double best_gbs = 0;  // fastest repetition
  size_t bytes = 0;     // per repetition
  int reps = 0;
};

// Reads a `bytes` buffer (far larger than the L2, so every pass comes from HBM)
// `reps` times after a warm-up; allocates and frees the buffer itself.
Result<ReadBandwidth> measure_read_bandwidth(cudaStream_t stream, size_t bytes = size_t{4} << 30,
                                             int reps = 20);

}  // namespace fdpp::cuda
