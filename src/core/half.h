// Host-side fp16 / bf16 <-> fp32 conversion, bit-exact with the hardware's
// round-to-nearest-even (cvt.rn.f16.f32 / cvt.rn.bf16.f32), so CPU references
// and GPU kernels see the same rounded inputs.
#pragma once

#include <cstdint>
#include <cstring>

namespace fdpp {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 is the top half of an fp32; NaN stays a (quiet) NaN instead of rounding to Inf.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round half to even
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  if (exp == 0) {
    if (mant == 0) return f32_from_bits(sign);
    // Subnormal: value = mant * 2^-24, exact in fp32.
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u;                  // NaN
  if (u >= 0x477ff000u) return sign | 0x7c00u;                 // rounds to >= 65520: Inf
  if (u < 0x38800000u) {                                       // below the smallest normal 2^-14
    if (u < 0x33000000u) return sign;                          // below half the smallest subnormal
    // Subnormal: shift the full mantissa (with implicit 1) so the unit is 2^-24, round to even.
    const uint32_t exp = u >> 23;
    const uint32_t mant = (u & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even;
  // a carry out of the mantissa correctly bumps the exponent.
  u += 0xc8000fffu + ((u >> 13) & 1u);  // 0xc8000000 == -(112 << 23) mod 2^32
  return sign | static_cast<uint16_t>(u >> 13);
}

}  // namespace fdpp
