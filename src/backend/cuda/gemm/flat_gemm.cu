// ImplB's host side: the closed switch from a runtime configuration index and
// dtype to an instantiation (flat_gemm_<config>_<dtype>.cu).
#include "backend/cuda/gemm/flat_gemm.h"

#include <cstdint>
#include <string>

#include "dispatch/gemm_configs.h"

namespace fdpp::cuda {
namespace {

static_assert(kFlatConfigCount == 5, "add the new configuration's cases below (and its .cu files)");

template <DType kDType>
Status launch_for_config(int config, const GemmParams& p, KernelStream stream) {
  switch (config) {
    case 0: return launch_flat_gemm<0, kDType>(p, stream);
    case 1: return launch_flat_gemm<1, kDType>(p, stream);
    case 2: return launch_flat_gemm<2, kDType>(p, stream);
    case 3: return launch_flat_gemm<3, kDType>(p, stream);
    case 4: return launch_flat_gemm<4, kDType>(p, stream);
    default: return InvalidArgument("flat GEMM: no configuration " + std::to_string(config));
  }
}

template <DType kDType>
Result<int> prepare_config(int config) {
  switch (config) {
    case 0: return prepare_flat_gemm_config<0, kDType>();
    case 1: return prepare_flat_gemm_config<1, kDType>();
    case 2: return prepare_flat_gemm_config<2, kDType>();
    case 3: return prepare_flat_gemm_config<3, kDType>();
    case 4: return prepare_flat_gemm_config<4, kDType>();
    default: return InvalidArgument("flat GEMM: no configuration " + std::to_string(config));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

Result<int> prepare_flat_gemm(int config, DType dtype) {
  switch (dtype) {
    case DType::kF16: return prepare_config<DType::kF16>(config);
    case DType::kBF16: return prepare_config<DType::kBF16>(config);
    default: return Unsupported(std::string("flat GEMM: dtype ") + dtype_name(dtype));
  }
}

Status run_flat_gemm(int config, const GemmParams& p, DType dtype, KernelStream stream) {
  if (config < 0 || config >= kFlatConfigCount)
    return InvalidArgument("flat GEMM: no configuration " + std::to_string(config));
  const FlatConfigDesc& c = kFlatConfigs[config];
  if (p.m < 1 || p.m > c.max_m() || p.m_tiles != (p.m + 7) / 8 || p.n < 1 || p.k < 0 ||
      p.k % 8 != 0)
    return InvalidArgument("flat GEMM " + std::string(c.name) + ": M " + std::to_string(p.m) +
                           " (" + std::to_string(p.m_tiles) + " n8 tiles), N " +
                           std::to_string(p.n) + ", K " + std::to_string(p.k) +
                           " (needs M <= " + std::to_string(c.max_m()) + ", K % 8 == 0)");
  if (!aligned16(p.x) || !aligned16(p.w))
    return InvalidArgument("flat GEMM: x and w must start on 16-byte boundaries");
  if (p.prologue != GemvPrologue::kNone)
    return InvalidArgument("flat GEMM: no prologue on x (only ImplA fuses one)");
  if (p.k_split < 0 || p.k_split % 8 != 0 || (p.k > 0 && p.k_split == 0) || p.splits < 1 ||
      p.splits > 65535 || int64_t{p.splits - 1} * p.k_split >= (p.k > 0 ? p.k : 1) ||
      int64_t{p.splits} * p.k_split < p.k)
    return InvalidArgument("flat GEMM: k_split " + std::to_string(p.k_split) + " with " +
                           std::to_string(p.splits) + " splits does not tile K " +
                           std::to_string(p.k));
  if (p.splits > 1 && (p.partial == nullptr || p.counters == nullptr))
    return InvalidArgument("flat GEMM: split-K without a workspace");
  switch (dtype) {
    case DType::kF16: return launch_for_config<DType::kF16>(config, p, stream);
    case DType::kBF16: return launch_for_config<DType::kBF16>(config, p, stream);
    default: return Unsupported(std::string("flat GEMM: dtype ") + dtype_name(dtype));
  }
}

}  // namespace fdpp::cuda
