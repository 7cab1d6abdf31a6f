// GemmDispatcher: every linear() of the CUDA backend goes through here. It
// asks the pure planner (dispatch/gemm_plan.h) which implementation serves the
// call — ImplA gemv, an ImplB flat GEMM configuration, or ImplC cuBLASLt — and
// runs it. Owned by CudaBackend; one per backend, no global state.
//
// Graph safety: everything a plan may need is set up in create(): the kernels'
// shared-memory limits and occupancies, and the split-K workspace (fp32
// partials + arrival counters, fixed size, counters zeroed once and left zero
// by every launch). The plan of a call depends only on its shape, dtype,
// pointer alignment, the policy and the table, so a replayed graph runs what it
// captured. Change the policy or the table only between captures.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "backend/cuda/gemm/gemm_params.h"
#include "backend/cuda/launch.h"
#include "dispatch/gemm_plan.h"
#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

class CublasLtGemm;

// One call: y[m, n] (+)= x[m, k] · w[n, k]ᵀ (+ bias[n]), all of `dtype`.
struct GemmArgs {
  const void* x = nullptr;     // (m, k)
  const void* w = nullptr;     // (n, k)
  void* y = nullptr;           // (m, n): read only when accumulate
  const void* bias = nullptr;  // (n), or nullptr
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::kF16;
  bool accumulate = false;
  // Applied to x as ImplA loads it (gemm_params.h); only a plan that runs ImplA takes
  // one. x is (m, 2k) for kSiluMul.
  GemvPrologue prologue = GemvPrologue::kNone;
  const void* norm_weight = nullptr;  // kRmsNorm: (k)
  float norm_eps = 0.f;
};

class GemmDispatcher {
 public:
  // Bytes of device memory create() takes: the split-K partials and counters.
  static size_t workspace_bytes();

  // `cublas` must outlive the dispatcher. Prepares every kernel of `dtype` on the
  // current device and zeroes the counters in `workspace` (waits on `stream`).
  static Result<std::unique_ptr<GemmDispatcher>> create(DType dtype, CublasLtGemm* cublas,
                                                        Buffer workspace, GemmPolicy policy,
                                                        cudaStream_t stream);

  GemmPolicy policy() const { return policy_; }
  void set_policy(GemmPolicy p) { policy_ = p; }
  // A tuned table (issue 6); nullptr restores the built-in rule.
  void set_table(std::shared_ptr<const GemmTable> table) { table_ = std::move(table); }
  const GemmTable* table() const { return table_.get(); }
  const GemmDeviceTraits& traits() const { return traits_; }
  DType dtype() const { return dtype_; }

  // The planner's input for this call (shape, dtype, alignment).
  static GemmProblem problem(const GemmArgs& a);
  // What run() will execute for `a` under the current policy and table.
  GemmPlan plan(const GemmArgs& a) const;

  // Plans and runs one call. A forced policy that cannot run the shape falls
  // back to cuBLASLt, and says so once per shape in a debug log.
  Status run(const GemmArgs& a, KernelStream stream);
  // Runs exactly `choice` (benchmarks, tests): Unsupported if that kernel cannot
  // run `a`, instead of falling back.
  Status run_choice(const ImplChoice& choice, const GemmArgs& a, KernelStream stream);
  // Executes a resolved plan (from plan() or resolve_gemm_choice()).
  Status execute(const GemmPlan& plan, const GemmArgs& a, KernelStream stream);

 private:
  GemmDispatcher() = default;

  DType dtype_ = DType::kF16;
  CublasLtGemm* cublas_ = nullptr;
  Buffer workspace_;
  float* partial_ = nullptr;  // (splits, m, n) fp32, kSplitKPartialBytes
  int* counters_ = nullptr;   // (kSplitKCounters) arrival tickets
  GemmPolicy policy_ = GemmPolicy::kAuto;
  std::shared_ptr<const GemmTable> table_;
  GemmDeviceTraits traits_;
  std::set<std::tuple<int64_t, int64_t, int64_t, GemmPolicy>> logged_fallbacks_;
};

}  // namespace fdpp::cuda
