#include "backend/cuda/cuda_backend.h"

#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemm/cublaslt.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "backend/cuda/op_checks.h"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(cudaGraph_t graph, cudaGraphExec_t exec, cudaStream_t stream)
      : graph_(graph), exec_(exec), stream_(stream) {}
  ~CudaStepGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  Status replay() override {
    FDPP_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
    return Status::Ok();
  }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: leave no error behind
    return false;
  }
  for (int d = 0; d < count; ++d) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) == cudaSuccess &&
        major >= 8)
      return true;
  }
  (void)cudaGetLastError();
  return false;
}

Result<std::unique_ptr<CudaBackend>> make_cuda_backend(const CudaBackendOptions& options) {
  if (options.activation_dtype != DType::kF16 && options.activation_dtype != DType::kBF16)
    return InvalidArgument(fmt::format("the CUDA backend runs f16 or bf16 activations, not {}",
                                       dtype_name(options.activation_dtype)));
  int count = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaError(fmt::format("no usable CUDA device: {} ({})", cudaGetErrorString(err),
                                 cudaGetErrorName(err)));
  }
  if (options.device < 0 || options.device >= count)
    return InvalidArgument(
        fmt::format("CUDA device {} does not exist ({} found)", options.device, count));

  std::unique_ptr<CudaBackend> be(new CudaBackend());
  be->device_ = options.device;
  be->dtype_ = options.activation_dtype;
  FDPP_CUDA_CHECK(cudaSetDevice(be->device_));
  FDPP_CUDA_CHECK(cudaGetDeviceProperties(&be->props_, be->device_));
  if (be->props_.major < 8)
    return Unsupported(fmt::format("{} has compute capability {}.{}; fdpp's kernels need 8.0+",
                                   be->props_.name, be->props_.major, be->props_.minor));
  // griddepcontrol is sm_90+, on the device and in the compiled kernels.
  be->pdl_ = options.pdl && be->props_.major >= 9 && kernels_support_pdl();
  be->fuse_prologues_ = options.fuse_prologues;
  if (options.pdl && be->props_.major >= 9 && !be->pdl_)
    spdlog::warn("programmatic dependent launch is off: this build's kernels were not compiled "
                 "for sm_90 (configure with -DFDPP_CUDA_ARCHS=90)");
  // Non-blocking: no implicit synchronisation with the legacy default stream,
  // which other libraries in the process may use.
  FDPP_CUDA_CHECK(cudaStreamCreateWithFlags(&be->stream_, cudaStreamNonBlocking));
  FDPP_ASSIGN_OR_RETURN(Buffer ws, be->alloc(CublasLtGemm::kWorkspaceBytes));
  FDPP_ASSIGN_OR_RETURN(be->gemm_, CublasLtGemm::create(std::move(ws)));
  // The split-K workspace is allocated whole here, so no GEMM grows anything later
  // (graph capture).
  FDPP_ASSIGN_OR_RETURN(Buffer gemm_ws, be->alloc(GemmDispatcher::workspace_bytes()));
  FDPP_ASSIGN_OR_RETURN(be->gemm_dispatch_,
                        GemmDispatcher::create(be->dtype_, be->gemm_.get(), std::move(gemm_ws),
                                               options.gemm, be->stream_));
  return be;
}

CudaBackend::~CudaBackend() {
  if (stream_) {
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);  // nothing may still use what is freed below
  }
  gemm_dispatch_.reset();  // holds a pointer to gemm_
  gemm_.reset();
  workspace_ = Buffer();
  retired_workspaces_.clear();
  if (stream_) cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

Status CudaBackend::activate() const {
  int current = -1;
  FDPP_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) FDPP_CUDA_CHECK(cudaSetDevice(device_));
  return Status::Ok();
}

Result<bool> CudaBackend::capturing() const {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  FDPP_CUDA_CHECK(cudaStreamIsCapturing(stream_, &st));
  return st != cudaStreamCaptureStatusNone;
}

// ---- memory ------------------------------------------------------------------

Result<Buffer> CudaBackend::alloc(size_t bytes) {
  FDPP_RETURN_IF_ERROR(activate());
  if (bytes == 0) return Buffer(nullptr, 0, Device::kCUDA, [](void*) {});
  FDPP_ASSIGN_OR_RETURN(const bool cap, capturing());
  if (cap)
    return InvalidArgument(fmt::format(
        "alloc of {} bytes while the stream is capturing a CUDA graph (allocate before capture)",
        bytes));
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure must not fail the next launch check
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    const std::string what = fmt::format(
        "cudaMalloc of {} bytes ({:.2f} GiB) failed on GPU {} ({}): {} bytes ({:.2f} GiB) free of "
        "{}",
        bytes, bytes / double(1 << 30), device_, props_.name, free_b, free_b / double(1 << 30),
        total_b);
    if (err == cudaErrorMemoryAllocation) return OutOfMemory(what);
    return CudaError(fmt::format("{}: {} ({})", what, cudaGetErrorString(err),
                                 cudaGetErrorName(err)));
  }
  return Buffer(p, bytes, Device::kCUDA, [](void* q) { (void)cudaFree(q); });
}

Result<Buffer> CudaBackend::alloc_host(size_t bytes) {
  FDPP_RETURN_IF_ERROR(activate());
  if (bytes == 0) return Buffer(nullptr, 0, Device::kCPU, [](void*) {});
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return OutOfMemory(fmt::format("cudaHostAlloc of {} bytes (pinned host memory) failed: {}",
                                   bytes, cudaGetErrorString(err)));
  }
  return Buffer(p, bytes, Device::kCPU, [](void* q) { (void)cudaFreeHost(q); });
}

Status CudaBackend::copy_from_host(const void* host, const Tensor& dst) {
  FDPP_RETURN_IF_ERROR(activate());
  if (dst.nbytes() == 0) return Status::Ok();
  if (dst.device != Device::kCUDA || dst.data == nullptr || host == nullptr)
    return InvalidArgument(fmt::format("copy_from_host: destination {} (or the host pointer) is "
                                       "not usable",
                                       dst.describe()));
  // From pageable memory the call returns once the bytes are staged, so the
  // caller may reuse `host` right away; from pinned memory it is capturable.
  FDPP_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, host, dst.nbytes(), cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

Status CudaBackend::copy_to_host(const Tensor& src, void* host) {
  // Refused up front while capturing: the copy would be recorded into the graph
  // and the wait below would then fail (a stream cannot be synchronised mid-capture).
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_ASSIGN_OR_RETURN(const bool cap, capturing());
  if (cap)
    return InvalidArgument("copy_to_host waits for the copy, which a capturing stream cannot: "
                           "use copy_to_host_async into alloc_host() memory");
  FDPP_RETURN_IF_ERROR(copy_to_host_async(src, host));
  return synchronize();
}

Status CudaBackend::copy_to_host_async(const Tensor& src, void* host) {
  FDPP_RETURN_IF_ERROR(activate());
  if (src.nbytes() == 0) return Status::Ok();
  if (src.device != Device::kCUDA || src.data == nullptr || host == nullptr)
    return InvalidArgument(fmt::format("copy_to_host: source {} (or the host pointer) is not "
                                       "usable",
                                       src.describe()));
  FDPP_CUDA_CHECK(
      cudaMemcpyAsync(host, src.data, src.nbytes(), cudaMemcpyDeviceToHost, stream_));
  return Status::Ok();
}

Status CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  FDPP_RETURN_IF_ERROR(activate());
  if (src.nbytes() != dst.nbytes())
    return InvalidArgument(fmt::format("copy: {} and {} differ in size", src.describe(), dst.describe()));
  if (src.nbytes() == 0) return Status::Ok();
  if (src.device != Device::kCUDA || dst.device != Device::kCUDA || !src.data || !dst.data)
    return InvalidArgument(fmt::format("copy: {} -> {} is not device to device", src.describe(),
                                       dst.describe()));
  FDPP_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDeviceToDevice, stream_));
  return Status::Ok();
}

Status CudaBackend::synchronize() {
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_ASSIGN_OR_RETURN(const bool cap, capturing());
  if (cap) return InvalidArgument("synchronize while the stream is capturing a CUDA graph");
  FDPP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Result<DeviceMemory> CudaBackend::memory_info() const {
  FDPP_RETURN_IF_ERROR(activate());
  DeviceMemory m;
  FDPP_CUDA_CHECK(cudaMemGetInfo(&m.free_bytes, &m.total_bytes));
  return m;
}

size_t CudaBackend::free_memory() const {
  Result<DeviceMemory> m = memory_info();
  return m.ok() ? m->free_bytes : SIZE_MAX;
}

Status CudaBackend::fill_bytes(const Tensor& t, uint8_t byte) {
  FDPP_RETURN_IF_ERROR(activate());
  if (t.nbytes() == 0) return Status::Ok();
  if (t.device != Device::kCUDA || t.data == nullptr)
    return InvalidArgument(fmt::format("fill_bytes: {} is not device memory", t.describe()));
  FDPP_CUDA_CHECK(cudaMemsetAsync(t.data, byte, t.nbytes(), stream_));
  return Status::Ok();
}

// ---- graphs ------------------------------------------------------------------

Status CudaBackend::begin_capture() {
  FDPP_RETURN_IF_ERROR(activate());
  // Thread-local: only this thread's unsafe calls (cudaMalloc, syncs) would
  // invalidate the capture; the backend refuses those itself before making them.
  FDPP_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  return Status::Ok();
}

Result<std::unique_ptr<StepGraph>> CudaBackend::end_capture() {
  FDPP_RETURN_IF_ERROR(activate());
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    return cuda_status(err, "cudaStreamEndCapture(stream_, &graph)", __FILE__, __LINE__);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  if (inst != cudaSuccess) {
    (void)cudaGetLastError();
    cudaGraphDestroy(graph);
    return cuda_status(inst, "cudaGraphInstantiate(&exec, graph, 0)", __FILE__, __LINE__);
  }
  return std::unique_ptr<StepGraph>(new CudaStepGraph(graph, exec, stream_));
}

// ---- ops -----------------------------------------------------------------------

Status CudaBackend::embed(const Tensor& ids, const Tensor& table, const Tensor& out) {
  constexpr const char* op = "embed";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_ASSIGN_OR_RETURN(const EmbeddingParams p, checks::gather(op, ids, table, out, dtype_));
  return run_embedding(p, dtype_, kernel_stream());
}

Status CudaBackend::rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  constexpr const char* op = "rmsnorm";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(checks::rank(op, "x", x, 2));
  const int64_t T = x.size(0), H = x.size(1);
  FDPP_RETURN_IF_ERROR(check_norm_eps(op, eps));
  if (H > 0x7fffffff) return OutOfRange(fmt::format("rmsnorm: hidden size {} too large", H));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "x", x, dtype_, Shape{T, H}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "weight", weight, dtype_, Shape{H}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "out", out, dtype_, Shape{T, H}));
  // In place (out == x) is fine: each element is read before the same thread writes it.
  if (out.data != x.data) FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "weight", weight));
  RmsNormParams p;
  p.x = x.data;
  p.weight = weight.data;
  p.out = out.data;
  p.rows = T;
  p.hidden = static_cast<int>(H);
  p.eps = eps;
  return run_rmsnorm(p, dtype_, kernel_stream());
}

namespace {

// The checks of a linear() call and the dispatcher's arguments for it. x is
// (M, x_width·K): x_width 2 for the SiLU-gate prologue, whose x holds gate|up.
Result<GemmArgs> linear_args(const char* op, const Tensor& x, int64_t x_width, const Tensor& w,
                             const Tensor& y, const LinearEpilogue& ep, DType dtype) {
  FDPP_RETURN_IF_ERROR(checks::rank(op, "x", x, 2));
  FDPP_RETURN_IF_ERROR(checks::rank(op, "w", w, 2));
  const int64_t M = x.size(0), K = w.size(1), N = w.size(0);
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "x", x, dtype, Shape{M, x_width * K}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "w", w, dtype, Shape{N, K}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "y", y, dtype, Shape{M, N}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "w", w));
  if (!ep.bias.empty()) {
    FDPP_RETURN_IF_ERROR(checks::tensor(op, "bias", ep.bias, dtype, Shape{N}));
    FDPP_RETURN_IF_ERROR(check_no_overlap(op, "y", y, "bias", ep.bias));
  }
  GemmArgs a;
  a.x = x.data;
  a.w = w.data;
  a.y = y.data;
  a.bias = ep.bias.empty() ? nullptr : ep.bias.data;
  a.m = M;
  a.n = N;
  a.k = K;
  a.dtype = dtype;
  a.accumulate = ep.accumulate;
  return a;
}

}  // namespace

Status CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor& y,
                           const LinearEpilogue& ep) {
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_ASSIGN_OR_RETURN(const GemmArgs a, linear_args("linear", x, 1, w, y, ep, dtype_));
  return gemm_dispatch_->run(a, kernel_stream());  // ImplA / ImplB / ImplC by policy and table
}

Status CudaBackend::fused_linear(const Tensor& x, const LinearPrologue& pro, const Tensor& w,
                                 const Tensor& y, const LinearEpilogue& ep) {
  constexpr const char* op = "fused_linear";
  using Kind = LinearPrologue::Kind;
  if (pro.kind == Kind::kNone) return linear(x, w, y, ep);
  FDPP_RETURN_IF_ERROR(activate());
  const bool gated = pro.kind == Kind::kSiluMul;
  FDPP_ASSIGN_OR_RETURN(GemmArgs a, linear_args(op, x, gated ? 2 : 1, w, y, ep, dtype_));
  // What the unfused path needs is checked on both, so a call is valid or not
  // regardless of which implementation the dispatcher picks for its shape.
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "scratch", pro.scratch, dtype_, Shape{a.m, a.k}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "scratch", pro.scratch, "x", x));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "scratch", pro.scratch, "y", y));
  if (!gated) {
    FDPP_RETURN_IF_ERROR(checks::tensor(op, "norm_weight", pro.norm_weight, dtype_, Shape{a.k}));
    FDPP_RETURN_IF_ERROR(check_norm_eps(op, pro.eps));
  }
  // Only ImplA applies a prologue; the plan is made once and executed as made.
  const GemmPlan plan = gemm_dispatch_->plan(a);
  const bool weight_aligned = reinterpret_cast<uintptr_t>(pro.norm_weight.data) % 16 == 0;
  if (!fuse_prologues_ || a.m > kMaxFusedPrologueM || plan.choice.impl != GemmImpl::kGemv ||
      (!gated && !weight_aligned))
    return Backend::fused_linear(x, pro, w, y, ep);
  a.prologue = gated ? GemvPrologue::kSiluMul : GemvPrologue::kRmsNorm;
  a.norm_weight = gated ? nullptr : pro.norm_weight.data;
  a.norm_eps = pro.eps;
  return gemm_dispatch_->execute(plan, a, kernel_stream());
}

Status CudaBackend::check_cache(const char* op, const KVCache* cache, int layer) const {
  if (cache == nullptr) return InvalidArgument(fmt::format("{}: no KV cache", op));
  const KVCacheLayout& l = cache->layout;
  if (cache->dtype != dtype_)
    return InvalidArgument(fmt::format("{}: KV cache is {}, activations are {}", op,
                                       dtype_name(cache->dtype), dtype_name(dtype_)));
  if (l.n_layers <= 0 || l.n_slots <= 0 || l.n_kv_heads <= 0 || l.capacity <= 0 ||
      l.head_dim <= 0)
    return InvalidArgument(fmt::format(
        "{}: bad KV cache layout (layers {}, slots {}, kv heads {}, capacity {}, head_dim {})", op,
        l.n_layers, l.n_slots, l.n_kv_heads, l.capacity, l.head_dim));
  const size_t need =
      static_cast<size_t>(l.n_layers) * static_cast<size_t>(l.elements_per_layer()) * 2;
  if (cache->k.device() != Device::kCUDA || cache->v.device() != Device::kCUDA ||
      cache->k.data() == nullptr || cache->v.data() == nullptr || cache->k.bytes() < need ||
      cache->v.bytes() < need)
    return InvalidArgument(fmt::format(
        "{}: KV cache buffers (k {} bytes on {}, v {} bytes on {}) do not hold {} bytes on cuda",
        op, cache->k.bytes(), device_name(cache->k.device()), cache->v.bytes(),
        device_name(cache->v.device()), need));
  if (layer < 0 || layer >= l.n_layers)
    return OutOfRange(fmt::format("{}: layer {} outside [0, {})", op, layer, l.n_layers));
  return Status::Ok();
}

Status CudaBackend::rope_and_append_kv(const RopeAppendArgs& a) {
  constexpr const char* op = "rope_and_append_kv";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(check_cache(op, a.cache, a.layer));
  const KVCacheLayout& l = a.cache->layout;
  const int D = l.head_dim, n_kv = l.n_kv_heads;
  FDPP_RETURN_IF_ERROR(checks::rank(op, "q_out", a.q_out, 3));
  const int64_t T = a.q_out.size(0), n_heads = a.q_out.size(1);
  if (n_heads < 1 || n_heads > 65535)
    return InvalidArgument(fmt::format("{}: q_out {} needs 1..65535 heads", op,
                                       a.q_out.describe()));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "q_out", a.q_out, dtype_, Shape{T, n_heads, D}));
  const int64_t width = (n_heads + 2 * n_kv) * D;  // q | k | v
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "qkv", a.qkv, dtype_, Shape{T, width}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "positions", a.positions, DType::kI32, Shape{T}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "slots", a.slots, DType::kI32, Shape{T}));
  const int rd = a.rotary_dim;
  if (D % 2 != 0 || rd < 0 || rd > D || rd % 2 != 0)
    return InvalidArgument(fmt::format(
        "{}: rotary_dim {} and head_dim {} must be even, with rotary_dim <= head_dim", op, rd, D));
  if (rd > 0)
    FDPP_RETURN_IF_ERROR(checks::tensor(op, "inv_freq", a.inv_freq, DType::kF32, Shape{rd / 2}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "q_out", a.q_out, "qkv", a.qkv));

  const size_t layer_bytes = static_cast<size_t>(l.elements_per_layer()) * 2;
  RopeAppendParams p;
  p.qkv = a.qkv.data;
  p.positions = a.positions.ptr<int32_t>();
  p.slots = a.slots.ptr<int32_t>();
  p.inv_freq = rd > 0 ? a.inv_freq.ptr<float>() : nullptr;
  p.q_out = a.q_out.data;
  p.k_cache = static_cast<char*>(a.cache->k.data()) + a.layer * layer_bytes;
  p.v_cache = static_cast<char*>(a.cache->v.data()) + a.layer * layer_bytes;
  p.n_tokens = T;
  p.n_heads = static_cast<int>(n_heads);
  p.n_kv_heads = n_kv;
  p.head_dim = D;
  p.rotary_dim = rd;
  p.interleaved = a.interleaved;
  p.n_slots = l.n_slots;
  p.capacity = l.capacity;
  return run_rope_append_kv(p, dtype_, kernel_stream());
}

Status CudaBackend::silu_mul(const Tensor& gate_up, const Tensor& out) {
  constexpr const char* op = "silu_mul";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(checks::rank(op, "gate_up", gate_up, 2));
  const int64_t M = gate_up.size(0), F2 = gate_up.size(1);
  if (F2 % 2 != 0)
    return InvalidArgument(fmt::format("{}: gate_up is {}; its width must be 2F (gate|up)", op,
                                       gate_up.describe()));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "gate_up", gate_up, dtype_, Shape{M, F2}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "out", out, dtype_, Shape{M, F2 / 2}));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "out", out, "gate_up", gate_up));
  SiluMulParams p;
  p.gate_up = gate_up.data;
  p.out = out.data;
  p.rows = M;
  p.ffn = F2 / 2;
  return run_silu_mul(p, dtype_, kernel_stream());
}

Status CudaBackend::argmax(const Tensor& logits, const Tensor& ids) {
  constexpr const char* op = "argmax";
  FDPP_RETURN_IF_ERROR(activate());
  FDPP_RETURN_IF_ERROR(checks::rank(op, "logits", logits, 2));
  const int64_t B = logits.size(0), V = logits.size(1);
  const DType lt = logits.dtype == DType::kF32 ? DType::kF32 : dtype_;
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "logits", logits, lt, Shape{B, V}));
  FDPP_RETURN_IF_ERROR(checks::tensor(op, "ids", ids, DType::kI32, Shape{B}));
  if (V == 0 && B > 0)
    return InvalidArgument(fmt::format("{}: logits {} has no columns", op, logits.describe()));
  FDPP_RETURN_IF_ERROR(check_no_overlap(op, "ids", ids, "logits", logits));
  ArgmaxParams p;
  p.logits = logits.data;
  p.ids = ids.ptr<int32_t>();
  p.rows = B;
  p.vocab = V;
  return run_argmax(p, lt, kernel_stream());
}

}  // namespace fdpp::cuda
