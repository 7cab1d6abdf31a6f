// RoPE fused with the KV-cache append: rotate q and k of each token by its
// position, write q to q_out, rotated k and raw v to the cache at
// (slot, kv_head, position) of this layer.
//
// Numerics follow the CPU reference (and HF's cos/sin): angle = float(pos) ·
// inv_freq[i] as one fp32 product, then accurate sincosf (no fast intrinsic: at
// position 4096 the argument is ~4096 rad and __sinf's error would be visible),
// the rotation in fp32 and one rounding to the activation type.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"
#include "backend/cuda/ops/ops.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;

// Grid (token, pair block): one thread per element pair of one head, over the
// q | k | v heads of the token's fused row. Consecutive threads take consecutive
// pairs, so rotate-half's two halves and the interleaved pairs are both
// coalesced runs.
template <class T>
__global__ void __launch_bounds__(kThreads) rope_append_kernel(const RopeAppendParams p) {
  const int64_t t = blockIdx.x;
  const int D = p.head_dim, half_d = D / 2;
  const int n_total = p.n_heads + 2 * p.n_kv_heads;
  const int64_t e = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (e >= static_cast<int64_t>(n_total) * half_d) return;
  const int head = static_cast<int>(e / half_d), pr = static_cast<int>(e % half_d);
  const int rot_half = p.rotary_dim / 2;

  // Before the PDL wait (launch.h) only what no kernel writes: the step's positions and slots
  // (the host uploads them before the graph; read through L2) and inv_freq (the loader's).
  // The rotation's sincos then overlaps the qkv GEMM's tail; qkv is read after the wait.
  const int pos = __ldcg(p.positions + t), slot = __ldcg(p.slots + t);
  float s = 0.f, c = 1.f;
  if (pr < rot_half) sincosf(static_cast<float>(pos) * p.inv_freq[pr], &s, &c);
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();

  const T* src = static_cast<const T*>(p.qkv) + (t * n_total + head) * D;  // (D)
  T* dst;  // (D)
  if (head < p.n_heads) {
    dst = static_cast<T*>(p.q_out) + (t * p.n_heads + head) * D;
  } else {
    // The engine validates positions and slots; this only keeps writes in bounds.
    if (pos < 0 || pos >= p.capacity || slot < 0 || slot >= p.n_slots) return;
    const bool is_k = head < p.n_heads + p.n_kv_heads;
    const int kvh = head - p.n_heads - (is_k ? 0 : p.n_kv_heads);
    const int64_t at = ((static_cast<int64_t>(slot) * p.n_kv_heads + kvh) * p.capacity + pos) * D;
    dst = static_cast<T*>(is_k ? p.k_cache : p.v_cache) + at;
    if (!is_k) {  // v is stored as is
      dst[2 * pr] = src[2 * pr];
      dst[2 * pr + 1] = src[2 * pr + 1];
      return;
    }
  }
  if (pr < rot_half) {
    // Pair pr turns by pos · inv_freq[pr]: dims (pr, pr + rotary_dim/2) for
    // rotate-half, (2pr, 2pr + 1) interleaved.
    const int a = p.interleaved ? 2 * pr : pr;
    const int b = p.interleaved ? 2 * pr + 1 : pr + rot_half;
    const float x0 = to_float(src[a]), x1 = to_float(src[b]);
    dst[a] = from_float<T>(x0 * c - x1 * s);
    dst[b] = from_float<T>(x1 * c + x0 * s);
  } else {
    // Dims past rotary_dim (partial rotary) pass through, two per thread.
    const int j = p.rotary_dim + 2 * (pr - rot_half);
    dst[j] = src[j];
    dst[j + 1] = src[j + 1];
  }
}

template <class T>
Status launch(const RopeAppendParams& p, KernelStream stream) {
  const int64_t pairs = static_cast<int64_t>(p.n_heads + 2 * p.n_kv_heads) * (p.head_dim / 2);
  const int64_t pair_blocks = (pairs + kThreads - 1) / kThreads;
  if (p.n_tokens > 0x7fffffff || pair_blocks > 65535)
    return OutOfRange("rope_and_append_kv: " + std::to_string(p.n_tokens) + " tokens x " +
                      std::to_string(pairs) + " pairs exceed the grid");
  const dim3 grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(pair_blocks));
  FDPP_KERNEL_CHECK(launch_kernel(rope_append_kernel<T>, grid, kThreads, 0, stream, p));
  return Status::Ok();
}

}  // namespace

Status run_rope_append_kv(const RopeAppendParams& p, DType dtype, KernelStream stream) {
  if (p.head_dim < 2 || p.head_dim % 2 != 0 || p.rotary_dim < 0 || p.rotary_dim % 2 != 0 ||
      p.rotary_dim > p.head_dim)
    return InvalidArgument("rope_and_append_kv: head_dim " + std::to_string(p.head_dim) +
                           " / rotary_dim " + std::to_string(p.rotary_dim) +
                           " (both even, rotary_dim <= head_dim)");
  if (p.n_tokens <= 0) return Status::Ok();
  switch (dtype) {
    case DType::kF16: return launch<__half>(p, stream);
    case DType::kBF16: return launch<__nv_bfloat16>(p, stream);
    default: break;
  }
  return Unsupported(std::string("rope_and_append_kv: dtype ") + dtype_name(dtype));
}

}  // namespace fdpp::cuda
