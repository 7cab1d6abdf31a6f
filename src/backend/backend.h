// The op contract. The model forward (src/model/) is written once against this
// interface; the CPU backend is its specification (plain fp32 loops) and the
// CUDA backend its fast path. Tests run every CUDA op against the CPU op.
//
// Conventions: tensors are row-major views (PyTorch order); every op writes its
// whole output and allocates nothing; shapes are checked and a mismatch is an
// InvalidArgument naming the op and both shapes. Ops on a device backend are
// asynchronous (stream-ordered); synchronize() waits for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "fdpp/status.h"

namespace fdpp {

// The KV cache: one contiguous region per (layer, slot) so that a decode step
// streams each sequence's keys of one KV head as a single run of memory.
struct KVCacheLayout {
  int n_layers = 0;
  int n_slots = 0;     // sequences that can be resident at once (max batch)
  int n_kv_heads = 0;
  int capacity = 0;    // positions per sequence (--ctx)
  int head_dim = 0;

  int64_t elements_per_layer() const {
    return static_cast<int64_t>(n_slots) * n_kv_heads * capacity * head_dim;
  }
  // Element offset of (layer, slot, kv_head, position, 0).
  int64_t offset(int layer, int slot, int kv_head, int pos) const {
    return ((static_cast<int64_t>(layer) * n_slots + slot) * n_kv_heads + kv_head) *
               static_cast<int64_t>(capacity) * head_dim +
           static_cast<int64_t>(pos) * head_dim;
  }
};

struct KVCache {
  KVCacheLayout layout;
  DType dtype = DType::kF32;
  Buffer k;  // (n_layers, n_slots, n_kv_heads, capacity, head_dim)
  Buffer v;  // (n_layers, n_slots, n_kv_heads, capacity, head_dim)

  // (n_slots, n_kv_heads, capacity, head_dim) views of one layer.
  Tensor k_layer(int layer) const;
  Tensor v_layer(int layer) const;
};

// Rotary embedding applied to q and k, then k and v appended to the cache.
struct RopeAppendArgs {
  Tensor qkv;        // (T, (n_heads + 2*n_kv_heads)*head_dim): fused QKV GEMM output, q|k|v
  Tensor positions;  // i32 (T): absolute position of each token
  Tensor slots;      // i32 (T): KV-cache slot of each token
  Tensor inv_freq;   // f32 (rotary_dim/2): rotation frequency of each dimension pair
  int rotary_dim = 0;        // dims rotated at the start of each head (== head_dim for Llama)
  bool interleaved = false;  // false: HF rotate-half pairs (i, i+rotary_dim/2); true: pairs (2i, 2i+1)
  KVCache* cache = nullptr;
  int layer = 0;
  Tensor q_out;      // (T, n_heads, head_dim): rotated queries
};

// How attention normalises its softmax (design.md, Technique 1; dispatch/softmax_range.h).
enum class SoftmaxMode : uint8_t {
  kSynchronized,  // online softmax: running row max, accumulator rescaled when it moves
  kUnified,       // one φ per row known up front: e^(s-φ) summed without rescaling; rows
                  // whose max leaves φ's safe range are recomputed synchronized (exact)
};

// One layer's unified-softmax state. The CPU backend is the specification and ignores it
// (its attention is exact); device backends read φ, keep the row maxes and count fallbacks.
struct AttentionSoftmaxArgs {
  SoftmaxMode mode = SoftmaxMode::kSynchronized;
  Tensor phi;           // f32 (n_heads): φ of each query head, in units of s = scale·q·k
  bool follow = false;  // decode: φ of (sequence, head) = row_max[slot, head] where finite
  // f32 (n_slots, n_heads): the last max s of each (slot, head) row. Prefill writes its last
  // query row's (either mode); unified decode writes every row's. Empty: not kept.
  Tensor row_max;
  Tensor fallbacks;     // i32 (1): +1 per row recomputed synchronized; empty: not counted
};

// One query token per sequence against that sequence's cached keys.
struct AttentionDecodeArgs {
  Tensor q;          // (B, n_heads, head_dim)
  const KVCache* cache = nullptr;
  int layer = 0;
  Tensor slots;      // i32 (B): cache slot of each sequence
  Tensor lengths;    // i32 (B): keys to attend (positions 0..len-1, the new token included)
  int max_length = 0;  // upper bound of lengths, fixed per CUDA graph: sizes the KV split grid
  float scale = 1.0f;  // 1/sqrt(head_dim)
  Tensor out;        // (B, n_heads, head_dim)
  AttentionSoftmaxArgs softmax;
};

// Optional side output of attention_prefill for `fdpp calibrate`: the distribution of the
// scaled scores s = scale·q·k over the call's causal (query, key) pairs. Empty: none.
struct ScoreStatsArgs {
  Tensor histogram;  // i32 (kScoreBins): counts added per bin of s (dispatch/softmax_range.h)
  Tensor minmax;     // f32 (2): min and max of s, lowered / raised in place
  Tensor row_max;    // f32 (T, n_heads): max_j s of each query row, written
};

// T query tokens of one sequence, at positions start_pos..start_pos+T-1, against
// cached keys 0..start_pos+T-1 with a causal mask (query i sees keys <= start_pos+i).
struct AttentionPrefillArgs {
  Tensor q;          // (T, n_heads, head_dim)
  const KVCache* cache = nullptr;
  int layer = 0;
  int slot = 0;
  int start_pos = 0;
  float scale = 1.0f;
  Tensor out;        // (T, n_heads, head_dim)
  AttentionSoftmaxArgs softmax;  // as for decode (follow is decode-only)
  ScoreStatsArgs stats;
};

// A recorded sequence of ops on a device stream, replayed as one launch (a CUDA
// graph). Pointers and launch shapes are frozen at capture; values in the
// buffers they point to (ids, positions, lengths) may change between replays.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual Status replay() = 0;
};

// Elementwise activations of a plain (ungated) MLP: OPT's ReLU, and exact (erf) GeLU.
enum class Activation { kRelu, kGelu };
const char* activation_name(Activation a);

// What a GEMM does to its output besides y = x·wᵀ (fused, so no extra pass).
struct LinearEpilogue {
  bool accumulate = false;  // y += x·wᵀ: the residual add
  Tensor bias;              // (N), added to every row; empty: no bias
};

// What a GEMM does to its input first: y (+)= f(x)·wᵀ. A backend may apply f while
// the GEMM loads x (the CUDA GEMV does), which saves the op's own kernel and its
// round trip through memory; otherwise f runs as its own op into `scratch`.
struct LinearPrologue {
  enum class Kind {
    kNone,
    kRmsNorm,  // f(x) = rmsnorm(x, norm_weight, eps); x is (M, K)
    kSiluMul,  // f(x) = silu(gate) · up with gate|up = x[:, :K | K:]; x is (M, 2K)
  };
  Kind kind = Kind::kNone;
  Tensor norm_weight;  // kRmsNorm: (K)
  float eps = 0.f;     // kRmsNorm
  // (M, K): where f(x) goes when the backend does not fuse f. Its content after the
  // call is unspecified (f(x), or untouched), so nothing may read it afterwards.
  Tensor scratch;

  static LinearPrologue rms_norm(const Tensor& weight, float eps, const Tensor& scratch) {
    return {Kind::kRmsNorm, weight, eps, scratch};
  }
  static LinearPrologue silu_mul(const Tensor& scratch) {
    return {Kind::kSiluMul, Tensor(), 0.f, scratch};
  }
};

class TunedGemmTable;       // dispatch/gemm_table.h
struct GpuIdentity;         // dispatch/gemm_table.h
struct GemmTimingRequest;   // backend/gemm_timing.h
struct GemmTiming;          // backend/gemm_timing.h
using GemmTimingProgress = std::function<void(const GemmTiming&)>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // The element type of activations and KV cache (f32 on the CPU; f16/bf16 on CUDA).
  virtual DType activation_dtype() const = 0;

  // ---- memory -------------------------------------------------------------
  virtual Result<Buffer> alloc(size_t bytes) = 0;
  // Copies dst.nbytes() bytes from host memory into dst (stream-ordered on a device).
  virtual Status copy_from_host(const void* host, const Tensor& dst) = 0;
  // Copies src.nbytes() bytes of src into host memory (and waits for them).
  virtual Status copy_to_host(const Tensor& src, void* host) = 0;
  // Stream-ordered copy into host memory from alloc_host(), without waiting:
  // capturable into a graph; the data is there after synchronize().
  virtual Status copy_to_host_async(const Tensor& src, void* host) { return copy_to_host(src, host); }
  // Copies src into dst, both on this backend, same byte size (stream-ordered).
  virtual Status copy(const Tensor& src, const Tensor& dst) = 0;
  virtual Status synchronize() = 0;
  // Bytes that alloc() can still hand out; SIZE_MAX when the backend cannot tell.
  virtual size_t free_memory() const { return SIZE_MAX; }
  // Host memory the device can copy from/to inside a captured graph (pinned on CUDA).
  virtual Result<Buffer> alloc_host(size_t bytes) { return host_alloc(bytes); }

  // ---- graphs (optional) ----------------------------------------------------
  // Backends without graphs run every step eagerly; the engine asks first.
  virtual bool supports_graphs() const { return false; }
  virtual Status begin_capture() { return Unsupported("this backend cannot capture graphs"); }
  virtual Result<std::unique_ptr<StepGraph>> end_capture() {
    return Unsupported("this backend cannot capture graphs");
  }
  Result<KVCache> alloc_kv_cache(const KVCacheLayout& layout);

  // ---- GEMM dispatch table (optional) ----------------------------------------
  // Only a backend with several GEMM implementations has a table to choose between them;
  // the defaults say Unsupported (the CPU backend has one linear()).
  // linear() / fused_linear() consult `table` from the next call on; graphs captured
  // before keep the plan they were captured with.
  virtual Status set_gemm_table(std::shared_ptr<const TunedGemmTable> table);
  // What a table is keyed by (the device's name, SM count, compute capability, runtime).
  virtual Result<GpuIdentity> gpu_identity() const;
  // Times every implementation the request names (backend/gemm_timing.h), each forced
  // past the table and the policy; `progress` (if set) is called after each timing.
  virtual Result<std::vector<GemmTiming>> time_gemms(const GemmTimingRequest& request,
                                                     const GemmTimingProgress& progress);

  // ---- ops ----------------------------------------------------------------
  // out[t, :] = table[ids[t], :]; ids outside [0, V) are an error on the CPU and
  // are checked before upload on devices.
  virtual Status embed(const Tensor& ids /* i32 (T) */, const Tensor& table /* (V, H) */,
                       const Tensor& out /* (T, H) */) = 0;
  // out[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * weight
  virtual Status rmsnorm(const Tensor& x /* (T, H) */, const Tensor& weight /* (H) */, float eps,
                         const Tensor& out /* (T, H) */) = 0;
  // y = x · wᵀ (+ bias), or y += x · wᵀ (+ bias) when accumulating (the residual add
  // as a GEMM epilogue). Every GEMM of the model goes through here, so a
  // dispatcher can route it.
  virtual Status linear(const Tensor& x /* (M, K) */, const Tensor& w /* (N, K) */,
                        const Tensor& y /* (M, N) */, const LinearEpilogue& ep) = 0;
  // linear(f(x)) with f the prologue. This default runs f into pro.scratch, then
  // linear(pro.scratch, ...); a backend overrides it where its GEMM can apply f itself.
  virtual Status fused_linear(const Tensor& x, const LinearPrologue& pro, const Tensor& w,
                              const Tensor& y, const LinearEpilogue& ep);
  // f(x) into pro.scratch as an op of its own (rmsnorm or silu_mul): the unfused half of
  // fused_linear. kNone writes nothing.
  Status apply_prologue(const Tensor& x, const LinearPrologue& pro);
  virtual Status rope_and_append_kv(const RopeAppendArgs& args) = 0;
  virtual Status attention_decode(const AttentionDecodeArgs& args) = 0;
  virtual Status attention_prefill(const AttentionPrefillArgs& args) = 0;
  // out[m, f] = silu(gate_up[m, f]) * gate_up[m, F + f]
  virtual Status silu_mul(const Tensor& gate_up /* (M, 2F) */, const Tensor& out /* (M, F) */) = 0;
  // out[t, :] = (x[t, :] - mean) / sqrt(var + eps) * weight + bias, the biased variance
  // of the row (torch.nn.LayerNorm). out may be x itself: a post-norm block (OPT-350m)
  // normalises the residual stream in place.
  virtual Status layernorm(const Tensor& x /* (T, H) */, const Tensor& weight /* (H) */,
                           const Tensor& bias /* (H) */, float eps,
                           const Tensor& out /* (T, H) */) = 0;
  // out[t, :] += table[ids[t], :]: a learned position embedding added to the residual
  // stream (ids are positions; same id checks as embed).
  virtual Status embed_add(const Tensor& ids /* i32 (T) */, const Tensor& table /* (V, H) */,
                           const Tensor& out /* (T, H) */) = 0;
  // out = act(x) elementwise; out may be x itself.
  virtual Status activation(const Tensor& x /* (M, N) */, const Tensor& out /* (M, N) */,
                            Activation act) = 0;
  // ids[b] = argmax_v logits[b, v] (the lowest index among ties)
  virtual Status argmax(const Tensor& logits /* (B, V) */, const Tensor& ids /* i32 (B) */) = 0;
};

// The CPU reference backend (always available).
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace fdpp
