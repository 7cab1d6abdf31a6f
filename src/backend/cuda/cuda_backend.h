// CudaBackend: the op contract on one GPU, fp16 or bf16 activations and KV cache.
// Every op is enqueued on the backend's own non-blocking stream and returns
// without waiting; synchronize() / copy_to_host() wait. The backend owns all
// CUDA state (stream, cuBLASLt handle and workspace, attention workspace,
// cached GEMM plans): there is no global mutable state, and a backend must
// outlive the buffers, graphs and views made from it.
//
// CUDA graphs: an op is capturable once it has run eagerly with the same
// shapes (first calls create cuBLASLt plans, query kernel occupancy and grow
// the split-KV workspace; none of that may happen during capture, and a
// workspace growth during capture is refused with a clear error). Outgrown
// workspaces are kept until the backend dies, since earlier graphs still point
// at them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/launch.h"
#include "dispatch/gemm_policy.h"
#include "dispatch/plan_decode.h"

namespace fdpp::cuda {

class CublasLtGemm;
class GemmDispatcher;

// The largest M whose RMSNorm / SiLU-gate prologue is fused into the GEMV. Every CTA of the
// fused GEMV re-reads its slice of x's M rows (RMSNorm: the whole rows, for the sum of
// squares) before its weight stream can use it, so the prologue's cost grows with M while
// the kernel it saves does not: fusing lost decode-step time at batch 2 and 4 on Llama-2
// 7B/13B (with and without the dispatch table) and gains it at batch 1
// (docs/experiments/log.md, "cuda_backend.h: the fused prologue by batch").
constexpr int64_t kMaxFusedPrologueM = 1;

struct CudaBackendOptions {
  int device = 0;
  DType activation_dtype = DType::kF16;  // kF16 or kBF16
  GemmPolicy gemm = GemmPolicy::kAuto;   // which implementation serves linear() (--gemm)
  // Programmatic dependent launch between fdpp's own kernels (launch.h; --pdl). Takes
  // effect on compute capability 9.0+ only.
  bool pdl = true;
  // fused_linear applies RMSNorm / the SiLU gate inside the GEMV's load of x (--fuse), at
  // M <= kMaxFusedPrologueM.
  // Off: the op runs as its own kernel, for measuring the difference.
  bool fuse_prologues = true;
};

struct DeviceMemory {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

// True when a CUDA driver and a device this build runs on (compute capability
// 8.0 or newer) are present; false, never an error, otherwise.
bool cuda_device_available();

class CudaBackend final : public Backend {
 public:
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::kCUDA; }
  DType activation_dtype() const override { return dtype_; }

  // ---- memory ---------------------------------------------------------------
  // cudaMalloc; OutOfMemory names the bytes requested and free.
  Result<Buffer> alloc(size_t bytes) override;
  Status copy_from_host(const void* host, const Tensor& dst) override;
  Status copy_to_host(const Tensor& src, void* host) override;
  // host must come from alloc_host() (pinned) for the copy to be capturable.
  Status copy_to_host_async(const Tensor& src, void* host) override;
  Status copy(const Tensor& src, const Tensor& dst) override;
  Status synchronize() override;
  size_t free_memory() const override;
  Result<Buffer> alloc_host(size_t bytes) override;  // pinned (cudaHostAlloc)

  // ---- graphs -----------------------------------------------------------------
  bool supports_graphs() const override { return true; }
  Status begin_capture() override;
  Result<std::unique_ptr<StepGraph>> end_capture() override;

  // ---- ops (backend/backend.h) ------------------------------------------------
  Status embed(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  Status rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  Status linear(const Tensor& x, const Tensor& w, const Tensor& y,
                const LinearEpilogue& ep) override;
  Status rope_and_append_kv(const RopeAppendArgs& args) override;
  Status attention_decode(const AttentionDecodeArgs& args) override;
  Status attention_prefill(const AttentionPrefillArgs& args) override;
  Status silu_mul(const Tensor& gate_up, const Tensor& out) override;
  // Fuses the prologue into the GEMV's load of x when the dispatcher picks ImplA for
  // the shape; runs the op and the GEMM separately otherwise.
  Status fused_linear(const Tensor& x, const LinearPrologue& pro, const Tensor& w,
                      const Tensor& y, const LinearEpilogue& ep) override;
  // layernorm, embed_add, activation: cuda_backend_ops.cpp.
  Status layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                   const Tensor& out) override;
  Status embed_add(const Tensor& ids, const Tensor& table, const Tensor& out) override;
  Status activation(const Tensor& x, const Tensor& out, Activation act) override;
  // logits of the activation dtype or f32.
  Status argmax(const Tensor& logits, const Tensor& ids) override;

  // ---- GEMM dispatch table (cuda_backend_gemm_table.cpp) ------------------------
  Status set_gemm_table(std::shared_ptr<const TunedGemmTable> table) override;
  Result<GpuIdentity> gpu_identity() const override;
  Result<std::vector<GemmTiming>> time_gemms(const GemmTimingRequest& request,
                                             const GemmTimingProgress& progress) override;

  // ---- CUDA specifics -----------------------------------------------------------
  cudaStream_t stream() const { return stream_; }
  // The stream as fdpp's kernel launchers take it: with PDL when enabled (launch.h).
  KernelStream kernel_stream() const { return {stream_, pdl_}; }
  bool pdl() const { return pdl_; }
  // Whether fused_linear applies prologues inside the GEMV (at M <= kMaxFusedPrologueM).
  bool fuses_prologues() const { return fuse_prologues_; }
  const cudaDeviceProp& props() const { return props_; }
  // Compute capability × 10 (90 for the H200): what kernels with per-arch features check.
  int sm_arch() const { return props_.major * 10 + props_.minor; }
  int device_ordinal() const { return device_; }
  Result<DeviceMemory> memory_info() const;
  // Sets every byte of t (stream-ordered): tests poison outputs with 0xFF, which
  // is NaN in f16, bf16 and f32.
  Status fill_bytes(const Tensor& t, uint8_t byte);

  // Forces the decode split count (clamped to [1, kDecodeMaxSplits]); 0 restores
  // the heuristic. For tests and ablations.
  void set_decode_splits_override(int splits) { decode_policy_.splits = splits; }
  // Forces the tensor-core decode kernel's warp tiles at head_dim 128 (decode_splits.h,
  // decode_mma_wide_tiles): kAuto follows the rule. For tests and bench-attention.
  using DecodeTiles = fdpp::DecodeTiles;
  void set_decode_tiles_override(DecodeTiles t) { decode_policy_.tiles = t; }
  // Routes every linear(): policy, dispatch table, and the forced runs of
  // benchmarks and tests (gemm/gemm_dispatch.h).
  GemmDispatcher& gemm_dispatcher() { return *gemm_dispatch_; }
  // The split count attention_decode uses for this shape (fast_kernel: head_dim
  // 64/128/256 with 16-byte aligned q/k/v, else the generic kernel).
  Result<int> decode_splits(int batch, int n_kv_heads, int group, int head_dim, int max_length,
                            bool fast_kernel);
  // Whether that launch, at `splits`, runs the tensor-core kernel's wide warp tiles.
  bool decode_wide_tiles(int batch, int n_kv_heads, int group, int head_dim, int max_length,
                         int splits, bool fast_kernel) const;
  // Grows the split-KV workspace for this shape now, outside any capture.
  Status reserve_decode_workspace(int batch, int n_heads, int n_kv_heads, int head_dim,
                                  int max_length);
  // The plan attention_decode runs for this shape (dispatch/plan_decode.h), with this
  // device's traits and the overrides above; measures the kernel's occupancy on first use.
  Result<DecodePlan> decode_plan(const DecodeShape& shape);
  size_t decode_workspace_bytes() const { return workspace_bytes_; }

 private:
  friend Result<std::unique_ptr<CudaBackend>> make_cuda_backend(const CudaBackendOptions&);
  CudaBackend() = default;

  // Makes the backend's device current (ops may be called from a thread whose
  // current device is another one).
  Status activate() const;
  Result<bool> capturing() const;
  // The split-KV partials buffer, grown to `bytes` if needed (refused while capturing).
  Result<void*> decode_workspace(size_t bytes);
  // decode_traits_ with the occupancy slot `shape` reads measured.
  Result<DecodeDeviceTraits> decode_traits(const DecodeShape& shape);
  Status check_cache(const char* op, const KVCache* cache, int layer) const;

  int device_ = 0;
  DType dtype_ = DType::kF16;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasLtGemm> gemm_;
  std::unique_ptr<GemmDispatcher> gemm_dispatch_;  // uses gemm_ for ImplC; owns split-K space
  Buffer workspace_;                  // split-KV partials (decode_workspace_assign layout)
  size_t workspace_bytes_ = 0;
  std::vector<Buffer> retired_workspaces_;  // outgrown, still referenced by earlier graphs
  DecodeDeviceTraits decode_traits_;  // occupancy slots measured on first use (0: not yet)
  DecodePolicy decode_policy_;        // the overrides
  bool pdl_ = false;
  bool fuse_prologues_ = true;
};

// Creates the stream, the cuBLASLt handle and its 32 MB workspace on `device`.
// InvalidArgument for a device that does not exist or a dtype other than
// f16/bf16; Unsupported below compute capability 8.0.
Result<std::unique_ptr<CudaBackend>> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace fdpp::cuda
