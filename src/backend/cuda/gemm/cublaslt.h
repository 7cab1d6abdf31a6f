// ImplC: y[M, N] (+)= x[M, K] · W[N, K]ᵀ through cuBLASLt, fp32 accumulation.
//
// cuBLAS is column-major; our row-major y (M, N) is a column-major N × M matrix
// with leading dimension N, and likewise x is K × M (ld K) and W is K × N (ld K).
// So D(N × M) = op(A)·op(B) with A = W stored K × N and transa = T (op(A) is
// N × K), B = x stored K × M and transb = N: D = W·xᵀ = (x·Wᵀ)ᵀ, i.e. y in
// row-major order; m = N, n = M, k = K in cuBLAS's names.
// Accumulate is beta = 1 with C = D = y (in place; cuBLASLt allows C == D when
// their layouts match); otherwise beta = 0 and y's old contents are not read.
// Bias is CUBLASLT_EPILOGUE_BIAS: a vector of D's length-of-column N (y's row
// length), in the activation dtype (cuBLASLt's default bias type for f16/bf16 D),
// added after alpha·AB + beta·C, so y (+)= x·Wᵀ + b in one pass. A bias below
// 16-byte alignment, or a shape for which cuBLASLt offers no bias algorithm, is
// added by a separate kernel after the GEMM instead (ops/bias_add.cu).
//
// Graph safety: the descriptors and the algorithm of a shape are created on the
// first call of that shape (the engine's warm-up, before capture) and cached;
// the workspace is allocated once, so a captured matmul never allocates.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "dispatch/gemm_plan.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

struct LinearParams {
  const void* x = nullptr;  // (m, k)
  const void* w = nullptr;  // (n, k)
  void* y = nullptr;        // (m, n)
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::kF16;  // x, w and y: f16 or bf16
  bool accumulate = false;    // y += x·wᵀ (the residual add as the GEMM's epilogue)
  const void* bias = nullptr;  // (n), dtype: added to every row of y; nullptr: none
  // Which of the heuristic's answers for this problem runs: 0 its first (the library's
  // pick), i > 0 the (i+1)-th, which `fdpp tune` found faster on this GPU. Unsupported
  // when the heuristic offers fewer.
  int algo = 0;
};

class CublasLtGemm {
 public:
  // 32 MB is what cuBLAS recommends on Hopper for its largest kernels.
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  // Heuristic answers a plan may pick from (LinearParams::algo < this).
  static constexpr int kMaxHeuristicAnswers = kMaxCublasAlgo + 1;

  // Takes ownership of `workspace` (device memory of at least kWorkspaceBytes).
  static Result<std::unique_ptr<CublasLtGemm>> create(Buffer workspace);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  Status run(const LinearParams& p, cudaStream_t stream);
  size_t cached_shapes() const { return plans_.size(); }

 private:
  // (m, n, k, dtype, accumulate, alignment of x, w, y, alignment of the bias or 0 for
  // none, heuristic index): the heuristic's answer depends on pointer alignment (the
  // bias's too, which it reads from the descriptor's bias pointer), so a less aligned view
  // gets its own plan.
  using Key = std::tuple<int64_t, int64_t, int64_t, DType, bool, uint32_t, uint32_t, uint32_t,
                         uint32_t, int>;
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr;  // W as K × N, ld K
    cublasLtMatrixLayout_t b = nullptr;  // x as K × M, ld K
    cublasLtMatrixLayout_t c = nullptr;  // y as N × M, ld N (C and D)
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
  };

  CublasLtGemm(cublasLtHandle_t handle, Buffer workspace);
  // `bias`: the bias pointer of the first call (the heuristic assumes its alignment).
  Result<const Plan*> plan(const Key& key, const void* bias);
  static void destroy(Plan& plan);

  cublasLtHandle_t handle_ = nullptr;
  Buffer workspace_;
  std::map<Key, Plan> plans_;
  std::set<Key> no_bias_algo_;  // bias keys cuBLASLt has no algorithm for: bias_add fallback
};

}  // namespace fdpp::cuda
