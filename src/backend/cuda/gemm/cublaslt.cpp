#include "backend/cuda/gemm/cublaslt.h"

#include <algorithm>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {
namespace {

// The largest power of two (capped at 256, cuBLASLt's default assumption) that
// divides the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

cudaDataType_t cuda_type(DType t) { return t == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F; }

}  // namespace

Result<std::unique_ptr<CublasLtGemm>> CublasLtGemm::create(Buffer workspace) {
  if (workspace.device() != Device::kCUDA || workspace.bytes() < kWorkspaceBytes)
    return InvalidArgument(fmt::format("cuBLASLt workspace: {} bytes on {}, need {} on cuda",
                                       workspace.bytes(), device_name(workspace.device()),
                                       kWorkspaceBytes));
  cublasLtHandle_t handle = nullptr;
  FDPP_CUBLAS_CHECK(cublasLtCreate(&handle));
  return std::unique_ptr<CublasLtGemm>(new CublasLtGemm(handle, std::move(workspace)));
}

CublasLtGemm::CublasLtGemm(cublasLtHandle_t handle, Buffer workspace)
    : handle_(handle), workspace_(std::move(workspace)) {}

CublasLtGemm::~CublasLtGemm() {
  for (auto& [key, plan] : plans_) destroy(plan);
  if (handle_) cublasLtDestroy(handle_);
}

void CublasLtGemm::destroy(Plan& plan) {
  if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.c) cublasLtMatrixLayoutDestroy(plan.c);
  if (plan.op) cublasLtMatmulDescDestroy(plan.op);
  plan = Plan{};
}

Result<const CublasLtGemm::Plan*> CublasLtGemm::plan(const Key& key) {
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  const auto [m, n, k, dtype, accumulate, align_x, align_w, align_y] = key;
  const cudaDataType_t type = cuda_type(dtype);

  Plan p;
  // Destroys whatever was created if a later step fails.
  struct Guard {
    Plan* p;
    ~Guard() {
      if (p) destroy(*p);
    }
  } guard{&p};

  FDPP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                   sizeof(trans_a)));
  FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                   sizeof(trans_b)));
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, type, static_cast<uint64_t>(k),
                                               static_cast<uint64_t>(n), k));  // W: K × N
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, type, static_cast<uint64_t>(k),
                                               static_cast<uint64_t>(m), k));  // x: K × M
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, type, static_cast<uint64_t>(n),
                                               static_cast<uint64_t>(m), n));  // y: N × M

  cublasLtMatmulPreference_t pref = nullptr;
  FDPP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const uint64_t max_ws = workspace_.bytes();
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws));
  // A = W, B = x, C = D = y.
  const uint32_t aligns[4] = {align_w, align_x, align_y, align_y};
  const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = cublasLtMatmulPreferenceSetAttribute(pref, align_attrs[i], &aligns[i], sizeof(uint32_t));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result,
                                        &found);
  cublasLtMatmulPreferenceDestroy(pref);
  FDPP_CUBLAS_CHECK(st);
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Unsupported(fmt::format(
        "cuBLASLt has no algorithm for linear M={} N={} K={} {}{} (alignment x {} w {} y {})", m,
        n, k, dtype_name(dtype), accumulate ? " accumulate" : "", align_x, align_w, align_y));
  p.algo = result.algo;
  p.workspace = result.workspaceSize;
  guard.p = nullptr;
  return &plans_.emplace(key, p).first->second;
}

Status CublasLtGemm::run(const LinearParams& p, cudaStream_t stream) {
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16)
    return Unsupported(fmt::format("linear: dtype {} (cuBLASLt path takes f16/bf16)",
                                   dtype_name(p.dtype)));
  if (p.m <= 0 || p.n <= 0) return Status::Ok();
  if (p.k <= 0) {  // an empty sum: y = 0, or y unchanged when accumulating
    if (p.accumulate) return Status::Ok();
    FDPP_CUDA_CHECK(cudaMemsetAsync(p.y, 0, static_cast<size_t>(p.m * p.n) * 2, stream));
    return Status::Ok();
  }
  const Key key{p.m, p.n, p.k, p.dtype, p.accumulate,
                alignment_of(p.x), alignment_of(p.w), alignment_of(p.y)};
  FDPP_ASSIGN_OR_RETURN(const Plan* plan, this->plan(key));
  const float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  FDPP_CUBLAS_CHECK(cublasLtMatmul(handle_, plan->op, &alpha, p.w, plan->a, p.x, plan->b, &beta,
                                   p.y, plan->c, p.y, plan->c, &plan->algo, workspace_.data(),
                                   plan->workspace, stream));
  return Status::Ok();
}

}  // namespace fdpp::cuda
