#include "backend/cuda/device_info.h"

#include <cuda_runtime.h>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {

std::string DeviceInfo::summary() const {
  const auto version = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB, CUDA runtime {}, driver {})", name, cc_major,
                     cc_minor, sm_count, total_memory / (1024.0 * 1024.0 * 1024.0),
                     version(runtime_version), version(driver_version));
}

Result<DeviceInfo> query_device_info(int ordinal) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky, but leave no error behind for the next check
    return cuda_status(err, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
  }
  if (ordinal < 0 || ordinal >= count)
    return InvalidArgument(fmt::format("CUDA device {} does not exist ({} found)", ordinal, count));
  cudaDeviceProp prop{};
  FDPP_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.l2_cache_bytes = prop.l2CacheSize;
  info.smem_per_sm = prop.sharedMemPerMultiprocessor;
  info.memory_bus_bits = prop.memoryBusWidth;
  info.total_memory = prop.totalGlobalMem;
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain.
  FDPP_CUDA_CHECK(
      cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  FDPP_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, ordinal));
  FDPP_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  FDPP_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  int current = 0;
  FDPP_CUDA_CHECK(cudaGetDevice(&current));
  FDPP_CUDA_CHECK(cudaSetDevice(ordinal));
  size_t free_b = 0, total_b = 0;
  const cudaError_t mem = cudaMemGetInfo(&free_b, &total_b);
  FDPP_CUDA_CHECK(cudaSetDevice(current));
  FDPP_CUDA_CHECK(mem);
  info.free_memory = free_b;
  return info;
}

}  // namespace fdpp::cuda
