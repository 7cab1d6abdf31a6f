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
constexpr float kBenchNormEps = 1e-5f;  // Llama-2's rms_norm_eps

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

// One plan ready to time: its graph of `calls` back-to-back calls.
struct PreparedPlan {
  std::unique_ptr<StepGraph> graph;
  int calls = 0;
  std::vector<double> us;  // per call, every timed replay so far
};

// Runs `plan` once per weight copy (cuBLASLt plan creation, first-launch costs), then
// captures `calls` of them into a graph, each after `before` when it is set (the prologue
// as its own kernel), and replays it twice (warm-up).
Status prepare_plan(CudaBackend& be, const GemmPlan& plan, GemmArgs args, const char* weights,
                    size_t copy_stride, int copies, const GemmBenchOptions& o,
                    const std::function<Status()>& before, PreparedPlan* out) {
  GemmDispatcher& d = be.gemm_dispatcher();
  const KernelStream stream = be.kernel_stream();  // with PDL when the engine has it
  const auto call = [&](int i) -> Status {
    if (before) FDPP_RETURN_IF_ERROR(before());
    args.w = weights + (i % copies) * copy_stride;
    return d.execute(plan, args, stream);
  };
  for (int i = 0; i < copies; ++i) FDPP_RETURN_IF_ERROR(call(i));
  FDPP_RETURN_IF_ERROR(be.synchronize());

  out->calls = std::max(o.min_calls, copies);
  FDPP_RETURN_IF_ERROR(be.begin_capture());
  Status captured = Status::Ok();
  for (int i = 0; i < out->calls && captured.ok(); ++i) captured = call(i);
  auto graph = be.end_capture();  // ends the capture on every path
  FDPP_RETURN_IF_ERROR(captured);
  if (!graph.ok()) return graph.status();
  out->graph = std::move(graph).value();
  for (int i = 0; i < 2; ++i) FDPP_RETURN_IF_ERROR(out->graph->replay());  // warm-up
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
    std::vector<GemmMeasurement> flat_timed;  // this shape's ImplB timings (flat_once_per_tile)
    if (s.n < 1 || s.k < 1)
      return InvalidArgument(fmt::format("bench-gemm: shape {} [{}, {}]", s.name, s.n, s.k));
    const size_t w_bytes = static_cast<size_t>(s.n * s.k) * dtype_size(dtype);
    const size_t stride = (w_bytes + kCopyAlign - 1) / kCopyAlign * kCopyAlign;
    const int copies = static_cast<int>(std::clamp<int64_t>(
        (o.rotate_bytes + static_cast<int64_t>(w_bytes) - 1) / w_bytes, o.min_copies,
        std::max(o.min_copies, o.max_copies)));
    FDPP_ASSIGN_OR_RETURN(Buffer weights, be.alloc(stride * copies));
    // x is (M, K), or (M, 2K) for the SiLU gate's gate|up; the norm weight is (K).
    const bool gated = s.prologue == LinearPrologue::Kind::kSiluMul;
    const size_t x_elems = static_cast<size_t>(max_m * s.k) * (gated ? 2 : 1);
    FDPP_ASSIGN_OR_RETURN(Buffer x, be.alloc(x_elems * 2));
    FDPP_ASSIGN_OR_RETURN(Buffer y, be.alloc(static_cast<size_t>(max_m * s.n) * 2));  // (M, N)
    FDPP_ASSIGN_OR_RETURN(Buffer norm_w, be.alloc(static_cast<size_t>(s.k) * 2));
    // (M, K): where an unfused prologue writes f(x) for the GEMM (LinearPrologue::scratch).
    FDPP_ASSIGN_OR_RETURN(Buffer scratch, be.alloc(static_cast<size_t>(max_m * s.k) * 2));
    auto* wbase = static_cast<char*>(weights.data());
    // W ~ U(-1/√K, 1/√K) keeps y of order 1, as trained weights do; x ~ U(-1, 1).
    const float w_scale = 1.0f / std::sqrt(static_cast<float>(s.k));
    for (int i = 0; i < copies; ++i)
      FDPP_RETURN_IF_ERROR(fill_random(wbase + i * stride, static_cast<size_t>(s.n * s.k), dtype,
                                       w_scale, 1000 * si + i, be.stream()));
    FDPP_RETURN_IF_ERROR(fill_random(x.data(), x_elems, dtype, 1.0f, 77 + si, be.stream()));
    FDPP_RETURN_IF_ERROR(
        fill_random(norm_w.data(), static_cast<size_t>(s.k), dtype, 1.0f, 99 + si, be.stream()));
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
        if (c.impl == GemmImpl::kGemv)
          splits.insert(splits.end(), o.gemv_splits.begin(), o.gemv_splits.end());
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
      // Every plan of this M is prepared first, then timed in o.rounds interleaved rounds
      // (each plan a few replays per round, after one untimed replay that brings its code
      // and state back): the GPU's speed drifts over milliseconds, and the candidates of one
      // M timed one after another were misranked by it (in one fdpp tune pass the GEMV
      // timings of one M moved together against another pass while cuBLASLt's, timed right
      // after them, barely moved; the cause is not established: docs/experiments/log.md,
      // "gemm_bench.cpp: drift between candidates").
      std::vector<GemmMeasurement> rs(plans.size());
      std::vector<PreparedPlan> prepared(plans.size());
      std::vector<bool> keep(plans.size(), true);
      for (size_t pi = 0; pi < plans.size(); ++pi) {
        const GemmPlan& plan = plans[pi];
        GemmMeasurement& r = rs[pi];
        r.planned = planned[pi];
        r.shape = s.name;
        r.n = s.n;
        r.k = s.k;
        r.m = m;
        r.choice = plan.choice;
        r.bytes = static_cast<double>(w_bytes) + 2.0 * m * s.k + 2.0 * m * s.n;
        r.timed_m = m;
        if (o.flat_once_per_tile && plan.choice.impl == GemmImpl::kFlat) {
          // The same plan at an M of the same n8 tile count already ran this kernel.
          const auto same = std::find_if(
              flat_timed.begin(), flat_timed.end(), [&](const GemmMeasurement& t) {
                return t.choice == plan.choice && (t.m + 7) / 8 == (m + 7) / 8;
              });
          if (same != flat_timed.end()) {
            r.us = same->us;
            r.us_min = same->us_min;
            r.timed_m = same->m;
            continue;
          }
        }
        // Each implementation as the engine runs it where it fuses the shape's prologue
        // (fused_linear): the GEMV with the prologue inside, the others after it as a
        // kernel of its own that writes their x.
        GemmArgs pa = a;
        std::function<Status()> before;
        if (o.engine_prologues && s.prologue != LinearPrologue::Kind::kNone &&
            m <= kMaxFusedPrologueM && be.fuses_prologues()) {
          if (gated) r.bytes += 2.0 * m * s.k;  // gate|up: twice the x of a plain call
          if (plan.choice.impl == GemmImpl::kGemv) {
            pa.prologue = gated ? GemvPrologue::kSiluMul : GemvPrologue::kRmsNorm;
            pa.norm_weight = gated ? nullptr : norm_w.data();
            pa.norm_eps = kBenchNormEps;
          } else {
            const Tensor in(x.data(), dtype, Device::kCUDA, Shape{m, gated ? 2 * s.k : s.k});
            const LinearPrologue pro{
                s.prologue, Tensor(norm_w.data(), dtype, Device::kCUDA, Shape{s.k}),
                kBenchNormEps, Tensor(scratch.data(), dtype, Device::kCUDA, Shape{m, s.k})};
            pa.x = scratch.data();
            before = [&be, in, pro] { return be.apply_prologue(in, pro); };
          }
        }
        const Status ready =
            prepare_plan(be, plan, pa, wbase, stride, copies, o, before, &prepared[pi]);
        // A heuristic index past the answers cuBLASLt offers for this shape: not a choice.
        if (plan.choice.impl == GemmImpl::kCublas && plan.choice.algo > 0 &&
            ready.code() == StatusCode::kUnsupported) {
          keep[pi] = false;
          continue;
        }
        FDPP_RETURN_IF_ERROR(ready.with_context(fmt::format("bench-gemm {} M={} {}", s.name, m,
                                                            impl_choice_name(plan.choice))));
      }
      const int rounds = std::clamp(o.rounds, 1, o.reps);
      for (int round = 0; round < rounds; ++round) {
        // Round `round` takes its share of the o.reps replays (the first rounds one more).
        const int reps = o.reps / rounds + (round < o.reps % rounds ? 1 : 0);
        for (PreparedPlan& pp : prepared) {
          if (!pp.graph) continue;
          if (rounds > 1) FDPP_RETURN_IF_ERROR(pp.graph->replay());
          FDPP_ASSIGN_OR_RETURN(const TimedRuns t,
                                time_runs(be.kernel_stream().stream, reps, pp.calls,
                                          [&] { return pp.graph->replay(); }));
          pp.us.insert(pp.us.end(), t.us.begin(), t.us.end());
        }
      }
      for (size_t pi = 0; pi < plans.size(); ++pi) {
        if (!keep[pi]) continue;
        GemmMeasurement& r = rs[pi];
        std::vector<double>& us = prepared[pi].us;
        if (prepared[pi].graph) {
          std::sort(us.begin(), us.end());
          r.us = us[us.size() / 2];
          r.us_min = us.front();
        }
        if (progress) progress(r);
        if (o.flat_once_per_tile && r.choice.impl == GemmImpl::kFlat && r.timed_m == m)
          flat_timed.push_back(r);
        results.push_back(std::move(r));
      }
    }
  }
  return results;
}

}  // namespace fdpp::cuda
