// What bench/tune report about the GPU they ran on, and key their tables by.
#pragma once

#include <cstddef>
#include <string>

#include "fdpp/status.h"

namespace fdpp::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;        // "NVIDIA H200"
  int sm_count = 0;
  int cc_major = 0;        // compute capability
  int cc_minor = 0;
  int runtime_version = 0;  // CUDA runtime, e.g. 13000 for 13.0
  int driver_version = 0;   // highest CUDA version the driver supports
  size_t total_memory = 0;  // bytes
  size_t free_memory = 0;   // bytes, at the time of the query
  int l2_cache_bytes = 0;
  size_t smem_per_sm = 0;   // bytes
  int memory_bus_bits = 0;
  int memory_clock_khz = 0;  // peak
  int sm_clock_khz = 0;      // peak
  // 2 (DDR) × clock × bus width: the datasheet figure, above what loads achieve.
  double peak_bandwidth_gbs() const {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
  }
  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, CUDA runtime 13.0, driver 13.0)"
  std::string summary() const;
};

// Queries device `ordinal`; a CudaError/InvalidArgument Status without a driver or device.
Result<DeviceInfo> query_device_info(int ordinal);

}  // namespace fdpp::cuda
