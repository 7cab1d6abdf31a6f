// The CUDA device as the apps see it: whether one can be used, what it is, and how fast it
// streams reads (the ceiling bench, bench-gemm and bench-attention set their figures against).
#pragma once

#include <cstddef>
#include <string>

#include "fdpp/status.h"

namespace fdpp {

// True when fdpp was built with CUDA and a CUDA device can be used.
bool cuda_available();

// True when fdpp was built with its CUDA backend; a device may still be missing
// (cuda_available() says whether one can be used).
bool built_with_cuda();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;     // "NVIDIA H200"
  std::string summary;  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, CUDA runtime 13.0, driver 13.0)"
  int sm_count = 0;
  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  int runtime_version = 0;  // CUDA runtime, e.g. 13000 for 13.0
  int driver_version = 0;   // highest CUDA version the driver supports
  size_t total_memory = 0;  // bytes
  // 2 (DDR) × memory clock × bus width: the datasheet figure, above what loads achieve.
  double peak_bandwidth_gbs = 0;
};

// Device `ordinal`; an error without CUDA, a driver or the device.
Result<DeviceInfo> query_device_info(int ordinal = 0);

struct ReadBandwidth {
  double gbs = 0;       // median over the repetitions, 1e9 bytes/s
  double best_gbs = 0;  // fastest repetition
};

// Device 0's streaming-read bandwidth, read the way fdpp's kernels read weights and KV cache,
// on a buffer far larger than the L2 (backend/cuda/bench/read_bandwidth.h). Call it before
// anything else takes the device's memory: the buffer is 4 GiB.
Result<ReadBandwidth> measure_read_bandwidth();

}  // namespace fdpp
