// The CUDA backend's side of GEMM tuning (tuning/gemm_tune.h): its GPU's identity, which
// keys a table, and Backend::time_gemms by gemm_bench (graph replays over rotated weight
// copies, each implementation forced).
#pragma once

#include <vector>

#include "backend/gemm_timing.h"
#include "dispatch/gemm_table.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

class CudaBackend;
struct DeviceInfo;

GpuIdentity gpu_identity(const DeviceInfo& info);
Result<GpuIdentity> gpu_identity(const CudaBackend& be);

// Times `r` as the engine runs the kernels: the GEMV with its shape's prologue fused where
// the engine fuses it (GemmBenchOptions::engine_prologues), a flat GEMM once per n8 tile
// of M (the padded tile runs the same kernel over the same bytes), and weight copies
// spanning r.rotate_bytes, or 4 × the L2 (at least 64 MB) when it is 0.
Result<std::vector<GemmTiming>> time_gemms(CudaBackend& be, const GemmTimingRequest& r,
                                           const GemmTimingProgress& progress);

}  // namespace fdpp::cuda
