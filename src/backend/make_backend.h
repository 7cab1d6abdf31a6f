// The backend factory: which backend an engine runs on, from its options. The one file
// that knows both backends, so the runtime needs neither backend's headers.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp {

struct BackendOptions {
  std::string device = "cpu";  // "cpu" or "cuda"
  // CUDA: "fp16" | "bf16"; empty: checkpoint_dtype's (an f32 checkpoint runs in fp16).
  // CPU: empty, "fp32" or "f32".
  std::string dtype;
  std::optional<DType> checkpoint_dtype;  // the model's torch_dtype, if it declares one
  std::string gemm = "auto";  // "auto" | "gemv" | "flat" | "cublas" (validated on both)
  bool pdl = true;    // CUDA: programmatic dependent launch where the device has it
  bool fuse = true;   // CUDA: prologues fused into the GEMV
};

// InvalidArgument for an unknown device, dtype or GEMM policy; Unsupported for "cuda" in a
// build without CUDA. *pdl (not null): whether the backend launches with programmatic
// dependent launch (false on the CPU).
Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options, bool* pdl);

// True when fdpp was built with CUDA and a CUDA device can be used.
bool cuda_backend_available();

}  // namespace fdpp
