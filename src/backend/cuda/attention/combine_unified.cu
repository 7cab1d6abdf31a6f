// Merges the split partials of the unified-max decode kernels (decode.h): every split's l
// and acc are relative to the same φ, so the row's output is just
//   out = Σ_s acc_s / Σ_s l_s
// with no exponentials and no rescale, and the row max m* = max_s m_s (each split's local
// max, tracked in registers) is known for the range check of dispatch/softmax_range.h.
//
// A row that fails the check (m* − φ outside [a, b], a non-finite or zero den, a
// non-finite output) is recomputed here, in the same CTA: the splits whose φ-relative
// partial cannot be trusted are redone with the synchronized softmax (decode_fallback.cuh)
// over the same key ranges, and all partials are merged with their own reference
// exponents in double precision, whose range (2^±1022) no score difference can leave:
//  * a row whose max is too far below φ (m* − φ < a) may have lost terms to underflow in
//    every split: all its splits are redone;
//  * otherwise a split is redone only if its own max overflowed (m_s − φ > b) or its
//    partial is not finite; the others lost at most len·2^-126 against a den above 2^b.
// The common path pays one pass over the partials, as the synchronized combine does.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/attention/combine_common.cuh"
#include "backend/cuda/attention/decode.h"
#include "backend/cuda/attention/decode_common.cuh"
#include "backend/cuda/attention/decode_fallback.cuh"
#include "backend/cuda/attention/softmax_state.cuh"
#include "backend/cuda/kernel_status.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/numeric.cuh"

namespace fdpp::cuda {
namespace {

using decode::FallbackSmem;
using decode::split_has_keys;
using decode::kThreads;
using decode::unified_phi_log2;

// The fallback of one row (rare): recompute the distrusted splits, merge in double.
template <class T>
__device__ void recompute_row(const DecodeParams& p, int b, int h, int slot, int len,
                              float phi, float m_star, bool whole_row, UnifiedType type,
                              FallbackSmem& sm) {
  const int tid = static_cast<int>(threadIdx.x);
  const int S = p.num_splits, D = p.head_dim;
  const int64_t row = static_cast<int64_t>(b) * p.n_heads + h;
  const float* pm = p.part_m + row * S;          // (S)
  const float* pl = p.part_l + row * S;          // (S)
  const float* pacc = p.part_acc + row * S * D;  // (S, D)
  const UnifiedRange range = unified_range(type, len);
  const int64_t kv_offset = (static_cast<int64_t>(slot) * p.n_kv_heads + h / p.group) *
                            static_cast<int64_t>(p.capacity) * D;
  const T* q_row = static_cast<const T*>(p.q) + row * D;  // (D)
  // Weights 2^(ref_s − ref) with ref the row max: in double no term under- or overflows.
  const double ref = merge_ref_f64(m_star);
  double num0 = 0.0, num1 = 0.0, den = 0.0;  // dims tid and tid + kThreads
  float row_max = -INFINITY;
  for (int s = 0; s < S; ++s) {
    if (!split_has_keys(pm[s], pl[s])) continue;
    bool finite = isfinite(pl[s]);
    for (int d = tid; d < D; d += kThreads) finite = finite && isfinite(pacc[s * D + d]);
    const bool redo = __syncthreads_or(whole_row || !(pm[s] - phi <= range.hi) || !finite);
    double w, l_s;
    float a0 = 0.f, a1 = 0.f;
    if (redo) {  // uniform
      const DecodeKeyRange r = decode_split_range(len, S, s, p.tile_keys);
      decode::sync_partial<T>(p, kv_offset, q_row, r.begin, r.end, sm);
      w = partial_weight_f64(sm.m, ref);
      l_s = sm.l;
      if (tid < D) a0 = sm.acc[tid];
      if (tid + kThreads < D) a1 = sm.acc[tid + kThreads];
      row_max = fmaxf(row_max, sm.m);
    } else {
      w = partial_weight_f64(phi, ref);
      l_s = pl[s];
      if (tid < D) a0 = pacc[s * D + tid];
      if (tid + kThreads < D) a1 = pacc[s * D + tid + kThreads];
      row_max = fmaxf(row_max, pm[s]);
    }
    den += w * l_s;
    num0 += w * a0;
    num1 += w * a1;
  }
  T* out = static_cast<T*>(p.out) + row * D;  // (D)
  if (tid < D) out[tid] = from_float<T>(static_cast<float>(num0 / den));
  if (tid + kThreads < D) out[tid + kThreads] = from_float<T>(static_cast<float>(num1 / den));
  if (tid == 0) {
    if (p.fallbacks != nullptr) atomicAdd(p.fallbacks, 1u);
    if (p.row_max != nullptr)
      p.row_max[static_cast<int64_t>(slot) * p.n_heads + h] = row_max * kLn2;
  }
}

// One CTA per row (sequence, query head); grid (batch · n_heads), kThreads threads, each
// owning dims tid and tid + kThreads. `type` holds P in the split kernel that wrote the
// partials (fp32 P: the CUDA-core kernels; fp16/bf16 P: the tensor-core one): it sets the
// range every check here uses and the center of row-following φ.
template <class T>
__global__ void __launch_bounds__(kThreads) combine_unified_kernel(const DecodeParams p,
                                                                    UnifiedType type) {
  __shared__ FallbackSmem sm;
  __shared__ decode::SplitWeights sw;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x;  // b · n_heads + h
  const int b = static_cast<int>(row / p.n_heads), h = static_cast<int>(row % p.n_heads);
  const int S = p.num_splits, D = p.head_dim;
  const float* pm = p.part_m + row * S;          // (S)
  const float* pl = p.part_l + row * S;          // (S)
  const float* pacc = p.part_acc + row * S * D;  // (S, D)
  // The row's slot and length before the PDL wait (launch.h): no kernel writes them (the host
  // uploads them before the graph), so their round trip overlaps the split kernel's tail
  // instead of adding to the merge's chain of dependent ones (combine_common.cuh). Through L2.
  const int slot = __ldcg(p.slots + b);
  const int len_in = __ldcg(p.lengths + b);
  decode::PhiInputs phi_in{decode::load_phi_calibrated(p, h), NAN};  // host-written: before the wait
  pdl_wait();  // PDL (launch.h): the previous kernel's outputs are ready after this
  pdl_launch_dependents();
  // Σ_s acc_s / Σ_s l_s over the splits with keys (weights 1: one φ for all).
  decode::stage_split_weights</*kRescale=*/false>(pm, pl, S, sw);
  // The same clamps as the split kernels (cta_work): a bad slot attends to nothing.
  const bool slot_ok = slot >= 0 && slot < p.n_slots;
  const int len = slot_ok ? max(0, min(len_in, p.capacity)) : 0;
  T* out = static_cast<T*>(p.out) + row * D;  // (D)
  if (len == 0) {  // every split is empty: attention over nothing is 0, as in the sync path
    for (int d = tid; d < D; d += kThreads) out[d] = from_float<T>(0.f);
    return;
  }
  // The previous row max goes out with the accumulators' loads and φ is decided after them
  // (load_phi_inputs).
  phi_in.previous_max = decode::load_phi_previous(p, slot, h);
  const float m_star = sw.m_star, den = sw.den;
  const float o0 = tid < D ? decode::weighted_split_sum(pacc, S, D, tid, sw) : 0.f;
  const float o1 =
      tid + kThreads < D ? decode::weighted_split_sum(pacc, S, D, tid + kThreads, sw) : 0.f;
  const float phi = unified_phi_log2(phi_in, type, len);
  // Only the dims a thread owns are divided: 0 / den takes the division's slow path.
  const float v0 = tid < D ? o0 / den : 0.f;
  const float v1 = tid + kThreads < D ? o1 / den : 0.f;
  const bool row_ok = unified_row_in_range(type, len, m_star - phi) && den > 0.f &&
                      isfinite(den);
  const bool mine_ok = (tid >= D || isfinite(v0)) && (tid + kThreads >= D || isfinite(v1));
  if (__syncthreads_and(row_ok && mine_ok)) {
    if (tid < D) out[tid] = from_float<T>(v0);
    if (tid + kThreads < D) out[tid + kThreads] = from_float<T>(v1);
    if (tid == 0 && p.row_max != nullptr)
      p.row_max[static_cast<int64_t>(slot) * p.n_heads + h] = m_star * kLn2;
    return;
  }
  const bool whole_row = !(m_star - phi >= unified_range(type, len).lo);
  recompute_row<T>(p, b, h, slot, len, phi, m_star, whole_row, type, sm);
}

}  // namespace

Status launch_decode_combine_unified(const DecodeParams& p, DType dtype, UnifiedType type,
                                     KernelStream stream) {
  if (p.num_splits < 2 || p.num_splits > kDecodeMaxSplits)
    return Internal("decode combine (unified): " + std::to_string(p.num_splits) +
                    " splits outside [2, " + std::to_string(kDecodeMaxSplits) + "]");
  if (p.head_dim < 2 || p.head_dim > 2 * kThreads || p.phi == nullptr)
    return Internal("decode combine (unified): head_dim " + std::to_string(p.head_dim) +
                    " outside [2, " + std::to_string(2 * kThreads) + "] or no φ");
  const int64_t rows = static_cast<int64_t>(p.batch) * p.n_heads;
  if (rows == 0) return Status::Ok();
  if (rows > 0x7fffffff)
    return OutOfRange("decode combine (unified): " + std::to_string(rows) +
                      " rows exceed the grid");
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kF16:
      FDPP_KERNEL_CHECK(
          launch_kernel(combine_unified_kernel<__half>, grid, kThreads, 0, stream, p, type));
      break;
    case DType::kBF16:
      FDPP_KERNEL_CHECK(
          launch_kernel(combine_unified_kernel<__nv_bfloat16>, grid, kThreads, 0, stream, p, type));
      break;
    default:
      return Unsupported(std::string("decode combine (unified): dtype ") + dtype_name(dtype));
  }
  return Status::Ok();
}

}  // namespace fdpp::cuda
