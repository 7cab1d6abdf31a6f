#include "backend/cuda/bench/gemm_bench.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "backend/cuda/bench/event_timer.h"
#include "backend/cuda/bench/fill_random.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemm/gemm_dispatch.h"

namespace fdpp::cuda {
namespace {

constexpr size_t kCopyAlign = 256;  // every weight copy starts 256-byte aligned, as a checkpoint's

std::vector<ImplChoice> choices_for(const GemmBenchOptions& o) {
  std::vector<ImplChoice> c;
  if (o.gemv) c.push_back({GemmImpl::kGemv, -1, 0});
  if (o.flat)
    for (int i = 0; i < kFlatConfigCount; ++i) c.push_back({GemmImpl::kFlat, i, 0});
  if (o.cublas)
    for (int a = 0; a < std::clamp(o.cublas_algos, 1, kMaxCublasAlgo + 1); ++a)
      c.push_back({GemmImpl::kCublas, -1, 0, a});
  return c;
}

// Runs `plan` once per weight copy (cuBLASLt plan creation, first-launch costs),
// then captures `calls` of them into a graph and times its replays.
Status time_plan(CudaBackend& be, const GemmPlan& plan, GemmArgs args, const char* weights,
                 size_t copy_stride, int copies, const GemmBenchOptions& o,
                 GemmMeasurement* out) {
  GemmDispatcher& d = be.gemm_dispatcher();
  const KernelStream stream = be.kernel_stream();  // with PDL when the engine has it
  for (int i = 0; i < copies; ++i) {
    args.w = weights + i * copy_stride;
    FDPP_RETURN_IF_ERROR(d.execute(plan, args, stream));
  }
  FDPP_RETURN_IF_ERROR(be.synchronize());

  const int calls = std::max(o.min_calls, copies);
  FDPP_RETURN_IF_ERROR(be.begin_capture());
  Status captured = Status::Ok();
  for (int i = 0; i < calls && captured.ok(); ++i) {
    args.w = weights + (i % copies) * copy_stride;
    captured = d.execute(plan, args, stream);
  }
  auto graph = be.end_capture();  // ends the capture on every path
  FDPP_RETURN_IF_ERROR(captured);
  if (!graph.ok()) return graph.status();

  for (int i = 0; i < 2; ++i) FDPP_RETURN_IF_ERROR((*graph)->replay());  // warm-up
  FDPP_ASSIGN_OR_RETURN(
      const TimedRuns t,
      time_runs(stream.stream, o.reps, calls, [&] { return (*graph)->replay(); }));
  out->us = t.median_us;
  out->us_min = t.min_us;
  return Status::Ok();
}

}  // namespace

Result<std::vector<GemmMeasurement>> run_gemm_bench(CudaBackend& be, const GemmBenchOptions& o,
                                                    const GemmBenchProgress& progress) {
  if (o.shapes.empty() || o.ms.empty() || o.reps < 1 || o.min_copies < 1)
    return InvalidArgument("bench-gemm: no shapes, no M values, or no repetitions");
  const DType dtype = be.activation_dtype();
  const int max_m = *std::max_element(o.ms.begin(), o.ms.end());
  if (*std::min_element(o.ms.begin(), o.ms.end()) < 1)
    return InvalidArgument("bench-gemm: M values must be positive");
  const std::vector<ImplChoice> choices = choices_for(o);
  GemmDispatcher& d = be.gemm_dispatcher();
  std::vector<GemmMeasurement> results;

  for (size_t si = 0; si < o.shapes.size(); ++si) {
    const GemmBenchShape& s = o.shapes[si];
    if (s.n < 1 || s.k < 1)
      return InvalidArgument(fmt::format("bench-gemm: shape {} [{}, {}]", s.name, s.n, s.k));
    const size_t w_bytes = static_cast<size_t>(s.n * s.k) * dtype_size(dtype);
    const size_t stride = (w_bytes + kCopyAlign - 1) / kCopyAlign * kCopyAlign;
    const int copies = static_cast<int>(std::max<int64_t>(
        o.min_copies, (o.rotate_bytes + static_cast<int64_t>(w_bytes) - 1) / w_bytes));
    FDPP_ASSIGN_OR_RETURN(Buffer weights, be.alloc(stride * copies));
    FDPP_ASSIGN_OR_RETURN(Buffer x, be.alloc(static_cast<size_t>(max_m * s.k) * 2));  // (M, K)
    FDPP_ASSIGN_OR_RETURN(Buffer y, be.alloc(static_cast<size_t>(max_m * s.n) * 2));  // (M, N)
    auto* wbase = static_cast<char*>(weights.data());
    // W ~ U(-1/√K, 1/√K) keeps y of order 1, as trained weights do; x ~ U(-1, 1).
    const float w_scale = 1.0f / std::sqrt(static_cast<float>(s.k));
    for (int i = 0; i < copies; ++i)
      FDPP_RETURN_IF_ERROR(fill_random(wbase + i * stride, static_cast<size_t>(s.n * s.k), dtype,
                                       w_scale, 1000 * si + i, be.stream()));
    FDPP_RETURN_IF_ERROR(fill_random(x.data(), static_cast<size_t>(max_m * s.k), dtype, 1.0f,
                                     77 + si, be.stream()));
    FDPP_RETURN_IF_ERROR(be.synchronize());

    for (const int m : o.ms) {
      GemmArgs a;
      a.x = x.data();
      a.w = wbase;
      a.y = y.data();
      a.m = m;
      a.n = s.n;
      a.k = s.k;
      a.dtype = dtype;
      std::vector<GemmPlan> plans;  // the planner's own split first for every implementation
      std::vector<bool> planned;
      for (const ImplChoice& c : choices) {
        std::vector<int> splits = {0};  // 0: the planner's choice
        if (c.impl != GemmImpl::kCublas)
          splits.insert(splits.end(), o.splits.begin(), o.splits.end());
        for (const int sk : splits) {
          const GemmPlan plan = resolve_gemm_choice({c.impl, c.config, sk, c.algo},
                                                    GemmDispatcher::problem(a), d.traits());
          if (plan.fallback != nullptr) continue;  // this implementation cannot run the shape
          const bool seen = std::any_of(plans.begin(), plans.end(), [&](const GemmPlan& q) {
            return q.choice == plan.choice;
          });
          if (!seen) plans.push_back(plan), planned.push_back(sk == 0);
        }
      }
      for (size_t pi = 0; pi < plans.size(); ++pi) {
        const GemmPlan& plan = plans[pi];
        GemmMeasurement r;
        r.planned = planned[pi];
        r.shape = s.name;
        r.n = s.n;
        r.k = s.k;
        r.m = m;
        r.choice = plan.choice;
        r.bytes = static_cast<double>(w_bytes) + 2.0 * m * s.k + 2.0 * m * s.n;
        const Status timed = time_plan(be, plan, a, wbase, stride, copies, o, &r);
        // A heuristic index past the answers cuBLASLt offers for this shape: not a choice.
        if (plan.choice.impl == GemmImpl::kCublas && plan.choice.algo > 0 &&
            timed.code() == StatusCode::kUnsupported)
          continue;
        FDPP_RETURN_IF_ERROR(timed.with_context(fmt::format("bench-gemm {} M={} {}", s.name, m,
                                                            impl_choice_name(plan.choice))));
        if (progress) progress(r);
        results.push_back(std::move(r));
      }
    }
  }
  return results;
}

}  // namespace fdpp::cuda
