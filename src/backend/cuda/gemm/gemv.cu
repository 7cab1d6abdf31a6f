// ImplA's host side: the closed switch from runtime (M, dtype) to an instantiation.
#include "backend/cuda/gemm/gemv.h"

#include <cstdint>
#include <string>

#include "dispatch/gemm_configs.h"

namespace fdpp::cuda {
namespace {

template <DType kDType>
Status launch_for_m(const GemmParams& p, KernelStream stream) {
  switch (p.m) {
    case 1: return launch_gemv<kDType, 1>(p, stream);
    case 2: return launch_gemv<kDType, 2>(p, stream);
    case 3: return launch_gemv<kDType, 3>(p, stream);
    case 4: return launch_gemv<kDType, 4>(p, stream);
    case 5: return launch_gemv<kDType, 5>(p, stream);
    case 6: return launch_gemv<kDType, 6>(p, stream);
    case 7: return launch_gemv<kDType, 7>(p, stream);
    case 8: return launch_gemv<kDType, 8>(p, stream);
    default: return InvalidArgument("gemv: M = " + std::to_string(p.m) + " outside 1..8");
  }
}

template <DType kDType>
Result<int> occupancy_for_m(int m) {
  switch (m) {
    case 1: return gemv_occupancy<kDType, 1>();
    case 2: return gemv_occupancy<kDType, 2>();
    case 3: return gemv_occupancy<kDType, 3>();
    case 4: return gemv_occupancy<kDType, 4>();
    case 5: return gemv_occupancy<kDType, 5>();
    case 6: return gemv_occupancy<kDType, 6>();
    case 7: return gemv_occupancy<kDType, 7>();
    case 8: return gemv_occupancy<kDType, 8>();
    default: return InvalidArgument("gemv: M = " + std::to_string(m) + " outside 1..8");
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

Status run_gemv(const GemmParams& p, DType dtype, KernelStream stream) {
  if (p.m < 1 || p.m > GemvConfig::kMaxM || p.n < 1 || p.k < 0 || p.k % 8 != 0)
    return InvalidArgument("gemv: M " + std::to_string(p.m) + ", N " + std::to_string(p.n) +
                           ", K " + std::to_string(p.k) + " (needs M in 1..8, N >= 1, K % 8 == 0)");
  if (!aligned16(p.x) || !aligned16(p.w))
    return InvalidArgument("gemv: x and w must start on 16-byte boundaries");
  const int64_t x_bytes = int64_t{p.m} * p.k_split * 2;  // the CTA's x slice in shared memory
  if (p.k_split < 0 || p.k_split % 8 != 0 || (p.k > 0 && p.k_split == 0) ||
      x_bytes > GemvConfig::kMaxXBytes || p.splits < 1 || p.splits > 65535 ||
      int64_t{p.splits - 1} * p.k_split >= (p.k > 0 ? p.k : 1) ||
      int64_t{p.splits} * p.k_split < p.k)
    return InvalidArgument("gemv: k_split " + std::to_string(p.k_split) + " with " +
                           std::to_string(p.splits) + " splits does not tile K " +
                           std::to_string(p.k) + " within the shared-memory x slice");
  if (p.prologue == GemvPrologue::kRmsNorm && !aligned16(p.norm_weight))
    return InvalidArgument("gemv: the RMSNorm prologue's weight must start on a 16-byte boundary");
  if (p.splits > 1 && (p.partial == nullptr || p.counters == nullptr))
    return InvalidArgument("gemv: split-K without a workspace");
  switch (dtype) {
    case DType::kF16: return launch_for_m<DType::kF16>(p, stream);
    case DType::kBF16: return launch_for_m<DType::kBF16>(p, stream);
    default: return Unsupported(std::string("gemv: dtype ") + dtype_name(dtype));
  }
}

Result<int> gemv_ctas_per_sm(int m, DType dtype) {
  switch (dtype) {
    case DType::kF16: return occupancy_for_m<DType::kF16>(m);
    case DType::kBF16: return occupancy_for_m<DType::kBF16>(m);
    default: return Unsupported(std::string("gemv: dtype ") + dtype_name(dtype));
  }
}

}  // namespace fdpp::cuda
