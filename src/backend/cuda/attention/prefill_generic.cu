// Prefill attention for head dims without a tensor-core instantiation (any even head_dim <=
// 256; stories260K has 8): correct and simple, CUDA cores, fp32 throughout. One warp per
// (query token, head); keys in blocks of 32, one key per lane for the score, then the lanes
// switch to owning dimension pairs for P·V. Online softmax per block of 32 keys, or (unified,
// p.policy) 2^(t - φ) with each lane's own max and sum, reduced once; a row out of φ's range
// (fp32, dispatch/softmax_range.h) is computed again by its warp with the synchronized softmax.
#include "backend/cuda/attention/prefill_params.h"
#include "dispatch/softmax_range.h"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda {
namespace {

constexpr int kGenericWarps = 4;    // query tokens per CTA
constexpr int kGenericMaxDim = 256;
constexpr int kPairsPerLane = kGenericMaxDim / 64;  // lane owns dims 2·lane + 64·i, +1

// Two adjacent elements (head_dim is even, so pairs are 4-byte aligned).
template <class T>
__device__ __forceinline__ float2 load2(const T* p) {
  return unpack2<T>(*reinterpret_cast<const uint32_t*>(p));
}

// grid (ceil(T / kGenericWarps), n_heads), block kGenericWarps * 32.
template <class T>
__global__ void __launch_bounds__(kGenericWarps * 32)
    prefill_generic_kernel(const PrefillParams p, int head_dim) {
  __shared__ float s_q[kGenericWarps][kGenericMaxDim];  // (warps, head_dim): q · scale·log2(e)
  __shared__ float s_p[kGenericWarps][32];              // (warps, 32): P of the current block
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int head = blockIdx.y;
  const int t = blockIdx.x * kGenericWarps + warp;
  if (t >= p.T) return;  // whole warp; nothing below synchronises across warps

  const int64_t q_off = (static_cast<int64_t>(t) * p.n_heads + head) * head_dim;
  const T* q = static_cast<const T*>(p.q) + q_off;           // (head_dim)
  T* out = static_cast<T*>(p.out) + q_off;                   // (head_dim)
  const int64_t kv_off = static_cast<int64_t>(head / p.group) * p.capacity * head_dim;
  const T* k = static_cast<const T*>(p.k) + kv_off;          // (capacity, head_dim)
  const T* v = static_cast<const T*>(p.v) + kv_off;          // (capacity, head_dim)

  for (int d = 2 * lane; d < head_dim; d += 64) {
    const float2 x = load2(q + d);
    s_q[warp][d] = x.x * p.scale_log2;
    s_q[warp][d + 1] = x.y * p.scale_log2;
  }
  __syncwarp();

  // Query t sits at position start_pos + t and sees keys 0 .. start_pos + t; later cache
  // positions are never read (they may hold stale data).
  const int kv_len = p.start_pos + t + 1;
  const bool unified = p.policy == SoftmaxPolicy::kUnifiedMax;
  const float phi = unified ? p.phi[head] * kLog2e : 0.f;
  bool sync = !unified;  // warp-uniform: the synchronized pass (also the unified fallback)
  float m, l;
  float acc[kPairsPerLane][2];
  for (;;) {  // one pass; unified: a second, synchronized, if the row fails its check
    m = -INFINITY;  // sync: running max of the scaled (log2-domain) scores; unified: lane max
    l = 0.f;        // sync: running denominator (the same in every lane); unified: lane sum
    for (int i = 0; i < kPairsPerLane; ++i) acc[i][0] = acc[i][1] = 0.f;
    for (int kb = 0; kb < kv_len; kb += 32) {
      const int key = kb + lane;
      float s = -INFINITY;
      if (key < kv_len) {
        const T* kr = k + static_cast<int64_t>(key) * head_dim;
        s = 0.f;
        for (int d = 0; d < head_dim; d += 2) {
          const float2 x = load2(kr + d);
          s += s_q[warp][d] * x.x + s_q[warp][d + 1] * x.y;
        }
      }
      float alpha = 1.f, pr;
      if (sync) {
        // Key kb (lane 0) is always valid, so m_new is finite from the first block on.
        const float m_new = fmaxf(m, warp_max(s));
        alpha = exp2f(m - m_new);  // 0 on the first block (m = -inf)
        pr = exp2f(s - m_new);     // 0 for lanes past the last key
        l = l * alpha + warp_sum(pr);
        m = m_new;
      } else {
        // softmax(t) = 2^(t - φ) / Σ 2^(t - φ) for any φ: no max, no rescale.
        pr = exp2f(s - phi);  // 0 for lanes past the last key (s = -inf)
        m = fmaxf(m, s);
        l += pr;
      }
      s_p[warp][lane] = pr;
      __syncwarp();
      const int n = min(32, kv_len - kb);
#pragma unroll
      for (int i = 0; i < kPairsPerLane; ++i) {
        acc[i][0] *= alpha;
        acc[i][1] *= alpha;
      }
      for (int jj = 0; jj < n; ++jj) {
        const float pj = s_p[warp][jj];
        const T* vr = v + static_cast<int64_t>(kb + jj) * head_dim;
#pragma unroll
        for (int i = 0; i < kPairsPerLane; ++i) {
          const int d = 2 * lane + 64 * i;
          if (d < head_dim) {
            const float2 x = load2(vr + d);
            acc[i][0] += pj * x.x;
            acc[i][1] += pj * x.y;
          }
        }
      }
      __syncwarp();  // s_p is rewritten by the next block
    }
    if (sync) break;
    m = warp_max(m);
    l = warp_sum(l);
    bool finite = true;
    for (int i = 0; i < kPairsPerLane; ++i) finite = finite && isfinite(acc[i][0] + acc[i][1]);
    if (__all_sync(0xffffffffu, finite) &&
        unified_row_in_range(UnifiedType::kF32, kv_len, m - phi) && l > 0.f && isfinite(l))
      break;
    if (lane == 0 && p.fallbacks != nullptr) atomicAdd(p.fallbacks, 1u);
    sync = true;  // the exact fallback: this row again, synchronized
  }
  if (t == p.T - 1 && lane == 0 && p.last_row_max != nullptr)
    p.last_row_max[head] = m * kLn2;  // the row's max t (either pass) in s units
  // l >= 1 (sync: the max key contributes exp2(0)), l >= 2^a (unified, checked).
  const float inv = 1.f / l;
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    const int d = 2 * lane + 64 * i;
    if (d < head_dim)
      *reinterpret_cast<uint32_t*>(out + d) = pack2<T>(acc[i][0] * inv, acc[i][1] * inv);
  }
}

// One launch per sequence of a batch (the generic kernel is not the one benchmarks time).
template <class T>
Status launch_generic(const PrefillParams& p, int head_dim, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.T + kGenericWarps - 1) / kGenericWarps),
                  static_cast<unsigned>(p.n_heads));
  if (grid.y > 65535) return OutOfRange("prefill attention (generic): n_heads > 65535");
  if (p.policy == SoftmaxPolicy::kUnifiedMax && p.phi == nullptr)
    return Internal("prefill attention (generic): unified softmax without φ");
  for (int b = 0; b < p.batch; ++b) {
    PrefillParams one = p;
    one.q = static_cast<const T*>(p.q) + b * p.q_batch_stride;
    one.out = static_cast<T*>(p.out) + b * p.q_batch_stride;
    one.k = static_cast<const T*>(p.k) + b * p.kv_batch_stride;
    one.v = static_cast<const T*>(p.v) + b * p.kv_batch_stride;
    one.batch = 1;
    prefill_generic_kernel<T><<<grid, kGenericWarps * 32, 0, stream>>>(one, head_dim);
    FDPP_KERNEL_CHECK_LAUNCH();
  }
  return Status::Ok();
}

}  // namespace

Status launch_prefill_generic(const PrefillParams& p, DType dtype, int head_dim,
                              cudaStream_t stream) {
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > kGenericMaxDim) {
    return Unsupported("prefill attention: head_dim must be even and <= 256");
  }
  switch (dtype) {
    case DType::kF16: return launch_generic<__half>(p, head_dim, stream);
    case DType::kBF16: return launch_generic<__nv_bfloat16>(p, head_dim, stream);
    default: return Unsupported("prefill attention: dtype must be f16 or bf16");
  }
}

}  // namespace fdpp::cuda
