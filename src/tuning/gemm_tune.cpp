#include "tuning/gemm_tune.h"

#include <algorithm>
#include <ctime>

#include "model/gemm_shapes.h"
#include "tuning/gemm_table_derive.h"

namespace fdpp {

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

std::vector<GemmTimingShape> distinct_gemm_shapes(const std::vector<GemmTimingShape>& shapes) {
  std::vector<GemmTimingShape> out;
  for (const GemmTimingShape& s : shapes) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const GemmTimingShape& o) { return o.n == s.n && o.k == s.k; });
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

std::vector<GemmTimingShape> model_gemm_tune_shapes(const ModelConfig& cfg) {
  std::vector<GemmTimingShape> all;
  for (const GemmShape& s : gemm_shapes(cfg)) all.push_back({s.name, s.n, s.k, s.prologue});
  return distinct_gemm_shapes(all);
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

Result<std::vector<GemmTiming>> measure_gemm_timings(Backend& be,
                                                     const std::vector<GemmTimingShape>& shapes,
                                                     const GemmTuneOptions& o,
                                                     const GemmTimingProgress& progress) {
  if (o.max_m < 1) return InvalidArgument("tune: the largest M must be at least 1");
  GemmTimingRequest r;
  r.shapes = shapes;
  r.ms = tune_ms(o.max_m);
  r.reps = o.reps;
  r.rounds = o.rounds;
  r.min_calls = o.min_calls;
  r.min_copies = o.min_copies;
  r.rotate_bytes = o.rotate_bytes;
  r.splits = o.splits;
  r.gemv_splits = o.gemv_splits;
  r.cublas_algos = o.cublas_algos;
  return be.time_gemms(r, progress);
}

Result<TunedGemmTable> tune_gemm_table(Backend& be, const std::vector<GemmTimingShape>& shapes,
                                       const GemmTuneOptions& o, const GemmTimingProgress& progress,
                                       std::vector<GemmTiming>* timings) {
  FDPP_ASSIGN_OR_RETURN(GpuIdentity gpu, be.gpu_identity());
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

}  // namespace fdpp
