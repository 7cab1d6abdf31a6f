#include "backend/cuda/bench/gemm_tune.h"

#include <algorithm>
#include <ctime>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"

namespace fdpp::cuda {

std::vector<int> tune_ms(int max_m) {
  std::vector<int> ms;
  for (int m = 1; m <= std::min(max_m, kFlatMaxM); ++m) ms.push_back(m);
  // Past the flat tiles only cuBLASLt runs: these points place its entries (and show
  // where its kernel changes), the next-above lookup covers the M in between.
  for (int m : {80, 96, 112, 128, 160, 192, 256, 320, 384, 448, 512})
    if (m <= max_m) ms.push_back(m);
  for (int m = 576; m <= max_m; m += 64) ms.push_back(m);
  return ms;
}

GpuIdentity gpu_identity(const DeviceInfo& info) {
  return {info.name, info.sm_count, info.cc_major, info.cc_minor, info.runtime_version};
}

Result<GpuIdentity> gpu_identity(const CudaBackend& be) {
  FDPP_ASSIGN_OR_RETURN(DeviceInfo info, query_device_info(be.device_ordinal()));
  return gpu_identity(info);
}

std::vector<GemmBenchShape> distinct_gemm_shapes(const std::vector<GemmBenchShape>& shapes) {
  std::vector<GemmBenchShape> out;
  for (const GemmBenchShape& s : shapes) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const GemmBenchShape& o) { return o.n == s.n && o.k == s.k; });
    if (it == out.end()) {
      out.push_back(s);
    } else {
      it->name += "," + s.name;
      // One table entry serves both: time the plain GEMV unless they share the prologue.
      if (it->prologue != s.prologue) it->prologue = LinearPrologue::Kind::kNone;
    }
  }
  return out;
}

int64_t gemm_tune_measurements(size_t shapes, const std::vector<int>& ms, size_t extra_splits,
                               int cublas_algos, size_t gemv_extra_splits) {
  const int64_t per_kernel = 1 + static_cast<int64_t>(extra_splits);
  int64_t per_shape = 0;
  for (int m : ms) {
    per_shape += std::max(1, cublas_algos);  // cuBLASLt (at most: a shape may offer fewer)
    if (m <= GemvConfig::kMaxM) per_shape += per_kernel + static_cast<int64_t>(gemv_extra_splits);
    for (const FlatConfigDesc& c : kFlatConfigs)
      if (m <= c.max_m()) per_shape += per_kernel;
  }
  return per_shape * static_cast<int64_t>(shapes);
}

Result<std::vector<GemmTiming>> measure_gemm_timings(CudaBackend& be,
                                                     const std::vector<GemmBenchShape>& shapes,
                                                     const GemmTuneOptions& o,
                                                     const GemmBenchProgress& progress) {
  if (o.max_m < 1) return InvalidArgument("tune: the largest M must be at least 1");
  GemmBenchOptions bo;
  bo.shapes = shapes;
  bo.ms = tune_ms(o.max_m);
  bo.reps = o.reps;
  bo.rounds = o.rounds;
  bo.min_calls = o.min_calls;
  bo.min_copies = o.min_copies;
  bo.splits = o.splits;
  bo.gemv_splits = o.gemv_splits;
  bo.flat_once_per_tile = true;
  bo.cublas_algos = o.cublas_algos;
  bo.engine_prologues = true;
  const int64_t l2 = be.props().l2CacheSize;
  bo.rotate_bytes = o.rotate_bytes > 0 ? o.rotate_bytes : std::max<int64_t>(4 * l2, int64_t{64} << 20);
  FDPP_ASSIGN_OR_RETURN(std::vector<GemmMeasurement> ms, run_gemm_bench(be, bo, progress));
  std::vector<GemmTiming> out;
  out.reserve(ms.size());
  for (const GemmMeasurement& r : ms)
    out.push_back({r.shape, r.n, r.k, r.m, r.choice, r.planned, r.us, r.timed_m});
  return out;
}

Result<TunedGemmTable> tune_gemm_table(CudaBackend& be, const std::vector<GemmBenchShape>& shapes,
                                       const GemmTuneOptions& o, const GemmBenchProgress& progress,
                                       std::vector<GemmTiming>* timings) {
  FDPP_ASSIGN_OR_RETURN(GpuIdentity gpu, gpu_identity(be));
  FDPP_ASSIGN_OR_RETURN(std::vector<GemmTiming> t,
                        measure_gemm_timings(be, distinct_gemm_shapes(shapes), o, progress));
  FDPP_ASSIGN_OR_RETURN(TunedGemmTable table, derive_gemm_table(t, gpu, be.activation_dtype()));
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  table.created = date;
  if (timings) *timings = std::move(t);
  return table;
}

}  // namespace fdpp::cuda
