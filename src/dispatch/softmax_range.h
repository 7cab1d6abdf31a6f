// The safe range of the unified-max softmax (design.md, Technique 1), shared by the CUDA
// kernels (host and device code) and the calibration tools (host only, no CUDA include).
//
// The identity: softmax(x)_i = e^(x_i − φ) / Σ_j e^(x_j − φ) for ANY φ. The synchronized
// (online) softmax takes φ = the running max, which forces a max reduction and a rescale
// of the accumulator whenever the max moves; the unified softmax takes one φ known before
// the first key, so every key tile (and every KV split) accumulates num = Σ e^(s−φ)·v and
// den = Σ e^(s−φ) independently and the partials are simply summed. The price: e^(s−φ)
// must neither overflow nor lose the row to underflow in the type that holds it. With
// m the row max of the scaled scores, the kernels check a ≤ m − φ ≤ b per row
// (sequence, query head) and recompute the rows that fail with the synchronized softmax.
//
// Units: everything here is in log2 units, t = s·log2(e) for a scaled score s = q·k/√d,
// because the kernels exponentiate with exp2 (one MUFU op); multiply by ln 2 for s units.
// len is the row's number of keys, L = ceil(log2(len)).
//
// The bounds (each term 2^(t−φ) ≤ 2^(m−φ), and the max term is in every den):
//  * fp32 accumulation of num and den (decode; fp32 P):
//      overflow:  den ≤ len·2^(m−φ) and |num| ≤ len·2^(m−φ)·max|v| must stay below
//                 2^128 (FLT_MAX); with |v| < 2^16 (every fp16 value) that is
//                 L + (m−φ) + 16 ≤ 127, so b = 111 − L.
//      underflow: terms below 2^-126 are flushed (ex2.approx.ftz), so a row loses at
//                 most len·2^-126 of den (and of num per unit |v|) against a den of at
//                 least 2^(m−φ): a relative error ≤ 2^(L − 126 − (m−φ)). Holding it to
//                 fp32's half-ulp 2^-24 gives a = L − 102.
//      e.g. len 32768: [−87, 96] log2 = [−60.3, 66.5] in s units.
//  * fp16 P fed to the tensor-core P·V product (prefill, fp16 models):
//      overflow:  P = 2^(t−φ) must stay below 65504 = 2^15.9997 once rounded, so
//                 b = 15.95 (the margin covers ex2.approx's 2-ulp error).
//      underflow: P below 2^-14 is subnormal in fp16 and is rounded to a multiple of
//                 2^-24 (absolute error ≤ 2^-25 per term, up to len·2^-25 per row). The
//                 synchronized kernel has P ≤ 1 = den's floor and pays the same
//                 len·2^-25 against a den ≥ 1; here den ≥ 2^(m−φ), so the same absolute
//                 loss weighs 2^-(m−φ) times more. Holding it to fp16's half-ulp 2^-11
//                 (one rounding of the output) gives a = L − 14.
//      e.g. len 1024: [−4, 15.95] log2 = [−2.8, 11.06] in s units; len 8192: [−1, 15.95].
//  * bf16 P (prefill, bf16 models): bf16 has fp32's exponent range, so the fp32 O
//      accumulator binds the top, b = 111 − L as above; P below 2^-126 is flushed and
//      bf16's half-ulp is 2^-8, so a = L − 126 + 8 = L − 118.
// A row that passes the check keeps the error of the synchronized kernel within one
// rounding of the type; a row that fails is recomputed, so the result is exact either way.
// Non-finite values (NaN m, Inf den) fail the check too: their rows are recomputed by the
// synchronized path and come out as that path makes them, never NaN/Inf because of φ.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define FDPP_HOST_DEVICE __host__ __device__
#else
#define FDPP_HOST_DEVICE
#endif

namespace fdpp {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Which type holds e^(s − φ) (and so bounds the unified softmax's range).
enum class UnifiedType : uint8_t {
  kF32,    // fp32 P and fp32 accumulation (decode kernels, generic prefill kernel)
  kF16P,   // P rounded to fp16 for the P·V mma (tensor-core prefill, fp16 models)
  kBF16P,  // P rounded to bf16 for the P·V mma (tensor-core prefill, bf16 models)
};

// Allowed m − φ in log2 units: lo ≤ m − φ ≤ hi.
struct UnifiedRange {
  float lo = 0.f;
  float hi = 0.f;
};

// ceil(log2(n)) for n ≥ 1; 0 for n ≤ 1.
FDPP_HOST_DEVICE constexpr int ceil_log2(int64_t n) {
#if defined(__CUDA_ARCH__)
  // In a kernel, one count of leading zeros (equal to the loop below for every n). The loop
  // ran 11 dependent steps for a 1K-key row on the unified combine's critical path, after
  // its last load; this and the combine's dropped 0/den divisions shortened every unified
  // decode call (docs/experiments/log.md, "softmax_range.h: ceil_log2 by leading zeros").
  if (!std::is_constant_evaluated())
    return n <= 1 ? 0 : min(62, 64 - __clzll(static_cast<long long>(n - 1)));
#endif
  int l = 0;
  while (l < 62 && (int64_t{1} << l) < n) ++l;
  return l;
}

// The range for a row of `len` keys (derivation above).
FDPP_HOST_DEVICE constexpr UnifiedRange unified_range(UnifiedType type, int64_t len) {
  const float L = static_cast<float>(ceil_log2(len));
  switch (type) {
    case UnifiedType::kF32: return {L - 102.f, 111.f - L};
    case UnifiedType::kF16P: return {L - 14.f, 15.95f};
    case UnifiedType::kBF16P: return {L - 118.f, 111.f - L};
  }
  return {0.f, -1.f};  // unreachable: an empty range fails every row
}

// The middle of the range, (lo + hi) / 2: where a φ derived from a known row max puts the row
// (row-following φ = the previous max − this; fp32: 4.5 whatever the length).
FDPP_HOST_DEVICE constexpr float unified_range_center(UnifiedType type, int64_t len) {
  const UnifiedRange r = unified_range(type, len);
  return 0.5f * (r.lo + r.hi);
}

// The per-row check on the row max (log2 units): false for NaN.
FDPP_HOST_DEVICE constexpr bool unified_row_in_range(UnifiedType type, int64_t len,
                                                     float m_minus_phi) {
  const UnifiedRange r = unified_range(type, len);
  return m_minus_phi >= r.lo && m_minus_phi <= r.hi;
}

// ---- score statistics (fdpp calibrate) -------------------------------------------------------
// A histogram of scaled scores s (s units) over [kScoreHistMin, -kScoreHistMin) in bins of
// 1/kScoreBinsPerUnit; values outside go to the first or last bin (the exact min and max are
// kept beside it). ±1024 covers the widest model the paper measured (OPT-6.7B, [−497, 364]).
constexpr float kScoreHistMin = -1024.f;
constexpr int kScoreBinsPerUnit = 8;
constexpr int kScoreBins = 16384;  // 2048 units × 8
static_assert(kScoreBins == static_cast<int>(-2.f * kScoreHistMin) * kScoreBinsPerUnit);

// The bin of s; NaN goes to bin 0 (calibration inputs are finite).
FDPP_HOST_DEVICE inline int score_bin(float s) {
  const float x = (s - kScoreHistMin) * static_cast<float>(kScoreBinsPerUnit);
  if (!(x >= 0.f)) return 0;
  if (x >= static_cast<float>(kScoreBins)) return kScoreBins - 1;
  return static_cast<int>(x);
}
// The lower edge of bin i (s units).
FDPP_HOST_DEVICE constexpr float score_bin_lower(int i) {
  return kScoreHistMin + static_cast<float>(i) / static_cast<float>(kScoreBinsPerUnit);
}

}  // namespace fdpp
