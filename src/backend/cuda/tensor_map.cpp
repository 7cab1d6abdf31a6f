#include "backend/cuda/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

namespace fdpp::cuda {
namespace {

// cuTensorMapEncodeTiled from the driver the runtime loaded (queried once).
Result<PFN_cuTensorMapEncodeTiled_v12000> encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static cudaError_t err = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e == cudaSuccess && q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    return e;
  }();
  if (fn == nullptr)
    return Unsupported(fmt::format("the driver offers no cuTensorMapEncodeTiled ({})",
                                   cudaGetErrorString(err)));
  return fn;
}

}  // namespace

Status encode_b16_tensor_map_sw128(const void* base, int64_t rows, int64_t cols, int box_rows,
                                   DType dtype, CUtensorMap* map) {
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return InvalidArgument(fmt::format("tensor map: dtype {} (f16 or bf16)", dtype_name(dtype)));
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0 || cols < 64 || (cols * 2) % 16 != 0 ||
      rows < 1 || rows > INT32_MAX || box_rows < 1 || box_rows > 256)
    return InvalidArgument(fmt::format(
        "tensor map: base {} rows {} cols {} box rows {} (16-byte aligned base and row pitch, "
        "cols >= 64, rows within int32, box rows in 1..256)",
        base, rows, cols, box_rows));
  FDPP_ASSIGN_OR_RETURN(PFN_cuTensorMapEncodeTiled_v12000 encode, encoder());
  *map = CUtensorMap{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols * 2)};  // bytes between rows
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(
      map, dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      2, const_cast<void*>(base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Internal(fmt::format("cuTensorMapEncodeTiled failed ({}) for rows {} cols {} box {}",
                                static_cast<int>(r), rows, cols, box_rows));
  return Status::Ok();
}

}  // namespace fdpp::cuda
