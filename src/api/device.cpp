// fdpp/device.h over the CUDA backend's device query and bandwidth probe.
#include "fdpp/device.h"

#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/read_bandwidth.h"
#include "backend/cuda/device_info.h"
#endif

namespace fdpp {

bool built_with_cuda() {
#ifdef FDPP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

#ifdef FDPP_HAVE_CUDA

Result<DeviceInfo> query_device_info(int ordinal) {
  auto info = cuda::query_device_info(ordinal);
  if (!info.ok()) return info.status();
  DeviceInfo d;
  d.ordinal = info->ordinal;
  d.name = info->name;
  d.summary = info->summary();
  d.sm_count = info->sm_count;
  d.cc_major = info->cc_major;
  d.cc_minor = info->cc_minor;
  d.runtime_version = info->runtime_version;
  d.driver_version = info->driver_version;
  d.total_memory = info->total_memory;
  d.peak_bandwidth_gbs = info->peak_bandwidth_gbs();
  return d;
}

Result<ReadBandwidth> measure_read_bandwidth() {
  cudaStream_t s = nullptr;
  if (cudaStreamCreate(&s) != cudaSuccess) return Internal("cannot create a CUDA stream");
  auto bw = cuda::measure_read_bandwidth(s);
  cudaStreamDestroy(s);
  if (!bw.ok()) return bw.status();
  return ReadBandwidth{.gbs = bw->gbs, .best_gbs = bw->best_gbs};
}

#else

Result<DeviceInfo> query_device_info(int) {
  return Unsupported("no CUDA device: this fdpp was built without CUDA (-DFDPP_CUDA=ON)");
}

Result<ReadBandwidth> measure_read_bandwidth() {
  return Unsupported("no CUDA device: this fdpp was built without CUDA (-DFDPP_CUDA=ON)");
}

#endif

}  // namespace fdpp
