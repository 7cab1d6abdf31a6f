#include "backend/make_backend.h"

#include <fmt/format.h>

#include "dispatch/gemm_policy.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace fdpp {

Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& o, bool* pdl) {
  *pdl = false;
  GemmPolicy gemm = GemmPolicy::kAuto;  // the CPU backend has one linear(); any valid name is fine
  if (!parse_gemm_policy(o.gemm, &gemm))
    return InvalidArgument(fmt::format("--gemm {}: expected auto, gemv, flat or cublas", o.gemm));
  DType requested = DType::kF32;
  if (!o.dtype.empty() && !parse_dtype(o.dtype, &requested))
    return InvalidArgument(fmt::format(
        "--dtype {}: unknown dtype (fp16, bf16 or fp32; the CPU backend runs fp32, CUDA fp16 or bf16)",
        o.dtype));
  if (o.device == "cpu") {
    if (!o.dtype.empty() && requested != DType::kF32)
      return InvalidArgument(fmt::format("--dtype {}: the CPU backend computes in fp32 only", o.dtype));
    return make_cpu_backend();
  }
  if (o.device != "cuda") return InvalidArgument(fmt::format("unknown device '{}' (cpu or cuda)", o.device));
#ifdef FDPP_HAVE_CUDA
  DType dtype = DType::kF16;  // an f32 checkpoint runs in fp16 on the GPU
  if (!o.dtype.empty()) {
    if (!parse_dtype(o.dtype, &dtype) || dtype == DType::kF32)
      return InvalidArgument(fmt::format("--dtype {}: the CUDA backend runs fp16 or bf16", o.dtype));
  } else if (o.checkpoint_dtype == DType::kBF16) {
    dtype = DType::kBF16;
  }
  cuda::CudaBackendOptions co;
  co.activation_dtype = dtype;
  co.gemm = gemm;
  co.pdl = o.pdl;
  co.fuse_prologues = o.fuse;
  FDPP_ASSIGN_OR_RETURN(auto be, cuda::make_cuda_backend(co));
  *pdl = be->pdl();
  return std::unique_ptr<Backend>(std::move(be));
#else
  return Unsupported("this fdpp was built without CUDA (configure with -DFDPP_CUDA=ON)");
#endif
}

bool cuda_backend_available() {
#ifdef FDPP_HAVE_CUDA
  return cuda::cuda_device_available();
#else
  return false;
#endif
}

}  // namespace fdpp
