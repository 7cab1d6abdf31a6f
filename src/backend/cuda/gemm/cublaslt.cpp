#include "backend/cuda/gemm/cublaslt.h"

#include <algorithm>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/ops.h"

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

Result<const CublasLtGemm::Plan*> CublasLtGemm::plan(const Key& key, const void* bias) {
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  const auto [m, n, k, dtype, accumulate, align_x, align_w, align_y, align_bias, algo] = key;
  if (algo < 0 || algo >= kMaxHeuristicAnswers)
    return InvalidArgument(fmt::format("cuBLASLt algorithm index {} outside [0, {})", algo,
                                       kMaxHeuristicAnswers));
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
  if (align_bias > 0) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                     &epilogue, sizeof(epilogue)));
    // Spelled out although it is the default (D's type): the bias is stored like the
    // activations, f16 or bf16, never fp32.
    const int32_t bias_type = type;
    FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                     &bias_type, sizeof(bias_type)));
    // The heuristic does not dereference the pointer but derives the alignment it may
    // assume from it; run() sets each call's own pointer (same alignment class).
    FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
  }
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, type, static_cast<uint64_t>(k),
                                               static_cast<uint64_t>(n), k));  // W: K × N
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, type, static_cast<uint64_t>(k),
                                               static_cast<uint64_t>(m), k));  // x: K × M
  FDPP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, type, static_cast<uint64_t>(n),
                                               static_cast<uint64_t>(m), n));  // y: N × M

  cublasLtMatmulPreference_t pref = nullptr;
  FDPP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t results[kMaxHeuristicAnswers] = {};
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
    st = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, algo + 1,
                                        results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  FDPP_CUBLAS_CHECK(st);
  if (found <= algo || results[algo].state != CUBLAS_STATUS_SUCCESS)
    return Unsupported(fmt::format(
        "cuBLASLt has {} algorithm(s), not {}, for linear M={} N={} K={} {}{}{} (alignment x {} "
        "w {} y {}{})",
        found, algo + 1, m, n, k, dtype_name(dtype), accumulate ? " accumulate" : "",
        align_bias ? " bias" : "", align_x, align_w, align_y,
        align_bias ? fmt::format(" bias {}", align_bias) : ""));
  p.algo = results[algo].algo;
  p.workspace = results[algo].workspaceSize;
  guard.p = nullptr;
  return &plans_.emplace(key, p).first->second;
}

Status CublasLtGemm::run(const LinearParams& p, cudaStream_t stream) {
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16)
    return Unsupported(fmt::format("linear: dtype {} (cuBLASLt path takes f16/bf16)",
                                   dtype_name(p.dtype)));
  if (p.m <= 0 || p.n <= 0) return Status::Ok();
  const BiasAddParams bias_add{p.y, p.bias, p.m, p.n};
  if (p.k <= 0) {  // an empty sum: y = 0 (+ bias), or y (+ bias) when accumulating
    if (!p.accumulate)
      FDPP_CUDA_CHECK(cudaMemsetAsync(p.y, 0, static_cast<size_t>(p.m * p.n) * 2, stream));
    return p.bias ? run_bias_add(bias_add, p.dtype, stream) : Status::Ok();
  }
  const float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  const uint32_t align_x = alignment_of(p.x), align_w = alignment_of(p.w),
                 align_y = alignment_of(p.y);
  // The fused bias: 16-byte aligned biases only (smaller alignments have failed at run
  // time in other engines' use of this epilogue, whatever the heuristic promised).
  if (p.bias != nullptr && alignment_of(p.bias) >= 16) {
    const Key key{p.m,     p.n,     p.k,     p.dtype,   p.accumulate,
                  align_x, align_w, align_y, alignment_of(p.bias), p.algo};
    if (!no_bias_algo_.count(key)) {
      auto planned = this->plan(key, p.bias);
      if (planned.ok()) {
        const Plan* plan = *planned;
        // The plan is shared by every weight of this shape: point it at this call's bias.
        FDPP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)));
        FDPP_CUBLAS_CHECK(cublasLtMatmul(handle_, plan->op, &alpha, p.w, plan->a, p.x, plan->b,
                                         &beta, p.y, plan->c, p.y, plan->c, &plan->algo,
                                         workspace_.data(), plan->workspace, stream));
        return Status::Ok();
      }
      if (planned.status().code() != StatusCode::kUnsupported) return planned.status();
      no_bias_algo_.insert(key);  // remembered: the heuristic is not asked again per call
    }
  }
  const Key key{p.m, p.n, p.k, p.dtype, p.accumulate, align_x, align_w, align_y, 0u, p.algo};
  FDPP_ASSIGN_OR_RETURN(const Plan* plan, this->plan(key, nullptr));
  FDPP_CUBLAS_CHECK(cublasLtMatmul(handle_, plan->op, &alpha, p.w, plan->a, p.x, plan->b, &beta,
                                   p.y, plan->c, p.y, plan->c, &plan->algo, workspace_.data(),
                                   plan->workspace, stream));
  return p.bias ? run_bias_add(bias_add, p.dtype, stream) : Status::Ok();
}

}  // namespace fdpp::cuda
