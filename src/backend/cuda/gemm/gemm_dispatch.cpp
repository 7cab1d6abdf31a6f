#include "backend/cuda/gemm/gemm_dispatch.h"

#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemm/cublaslt.h"
#include "backend/cuda/gemm/flat_gemm.h"
#include "backend/cuda/gemm/gemm_params.h"
#include "backend/cuda/gemm/gemv.h"

namespace fdpp::cuda {
namespace {

constexpr size_t kCounterBytes = sizeof(int) * kSplitKCounters;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// cuBLASLt's bias epilogue arrives with LinearParams::bias (the OPT/ChatGLM2
// issue); until then a bias on the cuBLASLt path is refused, never dropped.
template <class P>
bool set_bias(P& lp, const void* bias) {
  if constexpr (requires { lp.bias = bias; }) {
    lp.bias = bias;
    return true;
  } else {
    return bias == nullptr;
  }
}

}  // namespace

size_t GemmDispatcher::workspace_bytes() {
  return static_cast<size_t>(kSplitKPartialBytes) + kCounterBytes;
}

Result<std::unique_ptr<GemmDispatcher>> GemmDispatcher::create(DType dtype, CublasLtGemm* cublas,
                                                               Buffer workspace,
                                                               GemmPolicy policy,
                                                               cudaStream_t stream) {
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return InvalidArgument(fmt::format("GemmDispatcher: dtype {} (f16 or bf16)", dtype_name(dtype)));
  if (cublas == nullptr) return InvalidArgument("GemmDispatcher: no cuBLASLt context");
  if (workspace.device() != Device::kCUDA || workspace.bytes() < workspace_bytes())
    return InvalidArgument(fmt::format("GemmDispatcher: workspace of {} bytes on {}, need {} on cuda",
                                       workspace.bytes(), device_name(workspace.device()),
                                       workspace_bytes()));
  std::unique_ptr<GemmDispatcher> d(new GemmDispatcher());
  d->dtype_ = dtype;
  d->cublas_ = cublas;
  d->policy_ = policy;
  d->workspace_ = std::move(workspace);
  d->partial_ = static_cast<float*>(d->workspace_.data());
  d->counters_ = reinterpret_cast<int*>(static_cast<char*>(d->workspace_.data()) +
                                        kSplitKPartialBytes);
  FDPP_CUDA_CHECK(cudaMemsetAsync(d->counters_, 0, kCounterBytes, stream));
  FDPP_CUDA_CHECK(cudaStreamSynchronize(stream));

  int device = 0;
  FDPP_CUDA_CHECK(cudaGetDevice(&device));
  FDPP_CUDA_CHECK(cudaDeviceGetAttribute(&d->traits_.sm_count, cudaDevAttrMultiProcessorCount,
                                         device));
  for (int m = 1; m <= GemvConfig::kMaxM; ++m) {
    FDPP_ASSIGN_OR_RETURN(const int n, gemv_ctas_per_sm(m, dtype));
    d->traits_.gemv_ctas_per_sm[m - 1] = n > 0 ? n : -1;
  }
  for (int c = 0; c < kFlatConfigCount; ++c) {
    // A configuration that cannot be resident (more shared memory than this GPU
    // has) is never planned: its attribute call fails, or its occupancy is 0.
    auto n = prepare_flat_gemm(c, dtype);
    d->traits_.flat_ctas_per_sm[c] = n.ok() && *n > 0 ? *n : -1;
    if (!n.ok()) (void)cudaGetLastError();
    if (d->traits_.flat_ctas_per_sm[c] < 0)
      spdlog::debug("flat GEMM {} cannot run on this GPU ({}); it is never planned",
                    kFlatConfigs[c].name, n.ok() ? "no resident CTA" : n.status().message());
  }
  d->traits_.partial_bytes = kSplitKPartialBytes;
  d->traits_.counters = kSplitKCounters;
  return d;
}

GemmProblem GemmDispatcher::problem(const GemmArgs& a) {
  return {a.m, a.n, a.k, a.dtype, aligned16(a.x) && aligned16(a.w)};
}

GemmPlan GemmDispatcher::plan(const GemmArgs& a) const {
  return plan_gemm(problem(a), policy_, table_.get(), traits_);
}

Status GemmDispatcher::run(const GemmArgs& a, KernelStream stream) {
  GemmPlan p = plan(a);
  if (p.fallback != nullptr &&
      logged_fallbacks_.emplace(a.m, a.n, a.k, policy_).second)
    spdlog::debug("linear M={} N={} K={}: --gemm {} cannot run here ({}); cuBLASLt runs it", a.m,
                  a.n, a.k, gemm_policy_name(policy_), p.fallback);
  const Status s = execute(p, a, stream);
  if (s.code() != StatusCode::kUnsupported || p.choice.impl != GemmImpl::kCublas ||
      p.choice.algo == 0)
    return s;
  // The table names a cuBLASLt answer the heuristic does not offer for this call (a less
  // aligned view than the tuner's, say): the library's own pick, as without a table.
  p.choice.algo = 0;
  return execute(p, a, stream);
}

Status GemmDispatcher::run_choice(const ImplChoice& choice, const GemmArgs& a,
                                  KernelStream stream) {
  const GemmPlan p = resolve_gemm_choice(choice, problem(a), traits_);
  if (p.fallback != nullptr)
    return Unsupported(fmt::format("linear M={} N={} K={}: {} cannot run it: {}", a.m, a.n, a.k,
                                   impl_choice_name(choice), p.fallback));
  return execute(p, a, stream);
}

Status GemmDispatcher::execute(const GemmPlan& plan, const GemmArgs& a, KernelStream stream) {
  if (a.dtype != dtype_)
    return InvalidArgument(fmt::format("linear: {} arguments on a {} dispatcher",
                                       dtype_name(a.dtype), dtype_name(dtype_)));
  if (a.m <= 0 || a.n <= 0) return Status::Ok();  // an empty output
  const ImplChoice& c = plan.choice;
  if (a.prologue != GemvPrologue::kNone && c.impl != GemmImpl::kGemv)
    return Internal(fmt::format("linear M={} N={} K={}: a prologue on x needs ImplA, the plan is {}",
                                a.m, a.n, a.k, impl_choice_name(c)));
  if (c.impl == GemmImpl::kCublas) {
    LinearParams lp;
    lp.x = a.x;
    lp.w = a.w;
    lp.y = a.y;
    lp.m = a.m;
    lp.n = a.n;
    lp.k = a.k;
    lp.dtype = a.dtype;
    lp.accumulate = a.accumulate;
    lp.algo = c.algo;
    if (!set_bias(lp, a.bias))
      return Unsupported(fmt::format(
          "linear M={} N={} K={}: the cuBLASLt path has no bias epilogue in this build", a.m, a.n,
          a.k));
    return cublas_->run(lp, stream.stream);  // library kernels: plain stream order
  }
  // The planner guarantees 32-bit sizes and a workspace that holds the splits.
  GemmParams p;
  p.x = a.x;
  p.w = a.w;
  p.y = a.y;
  p.bias = a.bias;
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.k = static_cast<int>(a.k);
  p.k_split = static_cast<int>(plan.k_split);
  p.splits = c.splits;
  p.m_tiles = (p.m + 7) / 8;
  p.accumulate = a.accumulate;
  p.prologue = a.prologue;
  p.norm_weight = a.norm_weight;
  p.norm_eps = a.norm_eps;
  if (p.splits > 1) {
    if (static_cast<int64_t>(p.splits) * a.m * a.n * 4 > kSplitKPartialBytes ||
        plan.tiles > kSplitKCounters)
      return Internal(fmt::format("linear M={} N={} K={}: a {}-way split exceeds the workspace",
                                  a.m, a.n, a.k, p.splits));
    p.partial = partial_;
    p.counters = counters_;
  }
  if (c.impl == GemmImpl::kGemv) return run_gemv(p, a.dtype, stream);
  return run_flat_gemm(c.config, p, a.dtype, stream);
}

}  // namespace fdpp::cuda
