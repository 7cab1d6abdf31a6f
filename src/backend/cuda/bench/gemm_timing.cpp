#include "backend/cuda/bench/gemm_timing.h"

#include <algorithm>

#include "backend/cuda/bench/gemm_bench.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"

namespace fdpp::cuda {

GpuIdentity gpu_identity(const DeviceInfo& info) {
  return {info.name, info.sm_count, info.cc_major, info.cc_minor, info.runtime_version};
}

Result<GpuIdentity> gpu_identity(const CudaBackend& be) {
  FDPP_ASSIGN_OR_RETURN(DeviceInfo info, query_device_info(be.device_ordinal()));
  return gpu_identity(info);
}

Result<std::vector<GemmTiming>> time_gemms(CudaBackend& be, const GemmTimingRequest& r,
                                           const GemmTimingProgress& progress) {
  GemmBenchOptions bo;
  bo.shapes = r.shapes;
  bo.ms = r.ms;
  bo.reps = r.reps;
  bo.rounds = r.rounds;
  bo.min_calls = r.min_calls;
  bo.min_copies = r.min_copies;
  bo.splits = r.splits;
  bo.gemv_splits = r.gemv_splits;
  bo.flat_once_per_tile = true;
  bo.cublas_algos = r.cublas_algos;
  bo.engine_prologues = true;
  const int64_t l2 = be.props().l2CacheSize;
  bo.rotate_bytes = r.rotate_bytes > 0 ? r.rotate_bytes : std::max<int64_t>(4 * l2, int64_t{64} << 20);
  const auto timing = [](const GemmMeasurement& m) {
    return GemmTiming{m.shape, m.n, m.k, m.m, m.choice, m.planned, m.us, m.timed_m};
  };
  GemmBenchProgress each;
  if (progress) each = [&](const GemmMeasurement& m) { progress(timing(m)); };
  FDPP_ASSIGN_OR_RETURN(std::vector<GemmMeasurement> ms, run_gemm_bench(be, bo, each));
  std::vector<GemmTiming> out;
  out.reserve(ms.size());
  for (const GemmMeasurement& m : ms) out.push_back(timing(m));
  return out;
}

}  // namespace fdpp::cuda
