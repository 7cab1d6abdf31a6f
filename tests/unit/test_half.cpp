// core/half.h against independent references: exact double arithmetic with
// rint() (round half to even) and, for fp16, the compiler's _Float16.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.h"

namespace fdpp {
namespace {

bool f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

// Rounds |f| onto the grid of a binary format with `mant_bits` stored mantissa
// bits and smallest normal exponent `min_exp`, in double, where every step is
// exact; rint() does the round-half-to-even. Returns the rounded magnitude.
double round_to_grid(double a, int mant_bits, int min_exp) {
  const int e = std::max(std::ilogb(a), min_exp);
  const int spacing_exp = e - mant_bits;  // grid spacing around a, 2^spacing_exp
  return std::ldexp(std::rint(std::ldexp(a, -spacing_exp)), spacing_exp);
}

uint16_t ref_f32_to_f16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7e00;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  const double r = round_to_grid(a, 10, -14);
  if (r > 65504.0) return sign | 0x7c00;
  if (r < 0x1p-14) return sign | static_cast<uint16_t>(r * 0x1p24);  // subnormal (or 0)
  const int re = std::ilogb(r);
  const auto mant = static_cast<uint16_t>(std::ldexp(r, 10 - re) - 1024.0);
  return sign | static_cast<uint16_t>((re + 15) << 10) | mant;
}

uint16_t ref_f32_to_bf16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7fc0;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | 0x7f80;
  if (a == 0) return sign;
  const double r = round_to_grid(a, 7, -126);
  if (r > 0x1.fep127) return sign | 0x7f80;
  // r has at most 8 significant bits, so it is exact in fp32 and the low half is zero.
  const uint32_t bits = f32_bits(static_cast<float>(r));
  EXPECT_EQ(bits & 0xffffu, 0u) << f;
  return sign | static_cast<uint16_t>(bits >> 16);
}

// The exact value of an fp16 bit pattern (finite only).
double f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// Checks one input against the references; returns false (once reported) on a mismatch
// so a systematic bug does not print millions of lines.
bool check_f16(float f) {
  const uint16_t got = f32_to_f16(f);
  if (std::isnan(f)) {
    EXPECT_TRUE(f16_is_nan(got)) << "NaN input gave " << std::hex << got;
    return f16_is_nan(got);
  }
  const uint16_t want = ref_f32_to_f16(f);
  if (got != want) {
    ADD_FAILURE() << "f32_to_f16(" << std::hexfloat << f << ") = 0x" << std::hex << got
                  << ", reference 0x" << want;
    return false;
  }
#ifdef __FLT16_MANT_DIG__
  const auto hw = static_cast<_Float16>(f);
  uint16_t hw_bits;
  std::memcpy(&hw_bits, &hw, 2);
  if (hw_bits != want) {
    ADD_FAILURE() << "_Float16(" << std::hexfloat << f << ") = 0x" << std::hex << hw_bits
                  << " disagrees with the double reference 0x" << want;
    return false;
  }
#endif
  return true;
}

bool check_bf16(float f) {
  const uint16_t got = f32_to_bf16(f);
  if (std::isnan(f)) {
    EXPECT_TRUE(bf16_is_nan(got)) << "NaN input gave " << std::hex << got;
    return bf16_is_nan(got);
  }
  const uint16_t want = ref_f32_to_bf16(f);
  if (got != want) {
    ADD_FAILURE() << "f32_to_bf16(" << std::hexfloat << f << ") = 0x" << std::hex << got
                  << ", reference 0x" << want;
    return false;
  }
  return true;
}

// Inputs with a dense share of the interesting cases: every 1021st bit pattern
// (all exponents), uniformly random patterns, and random floats whose exponent
// lies around the fp16 range (where fp16 subnormals and overflow live).
std::vector<float> sample_floats() {
  std::vector<float> v;
  v.reserve(10'000'000);
  for (uint64_t u = 0; u <= 0xffffffffu; u += 1021) v.push_back(f32_from_bits(uint32_t(u)));
  std::mt19937 rng(12345);
  for (int i = 0; i < 2'000'000; ++i) v.push_back(f32_from_bits(rng()));
  for (int i = 0; i < 2'000'000; ++i) {
    const uint32_t r = rng();
    const uint32_t exp = 127 - 27 + (r >> 8) % 46;  // 2^-27 .. 2^18
    v.push_back(f32_from_bits((r & 0x80000000u) | (exp << 23) | (rng() & 0x7fffffu)));
  }
  return v;
}

TEST(Half, RoundingModeIsNearestEven) {
  // The references lean on rint(); make sure nothing changed the mode.
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
}

TEST(Half, AllF16PatternsRoundTrip) {
  int checked = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const float f = f16_to_f32(b);
    if (f16_is_nan(b)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(f16_is_nan(f32_to_f16(f))) << std::hex << h;
      continue;
    }
    if ((h & 0x7fff) == 0x7c00) {
      ASSERT_TRUE(std::isinf(f)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), f16_value(b)) << std::hex << h;
    }
#ifdef __FLT16_MANT_DIG__
    _Float16 hw;
    std::memcpy(&hw, &b, 2);
    ASSERT_EQ(f, static_cast<float>(hw)) << std::hex << h;
#endif
    ASSERT_EQ(f32_to_f16(f), b) << std::hex << h;
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 1023);  // all but the NaN patterns
}

TEST(Half, AllBF16PatternsRoundTrip) {
  int checked = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const float f = bf16_to_f32(b);
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(bf16_is_nan(f32_to_bf16(f))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(f32_bits(f), h << 16);
    ASSERT_EQ(f32_to_bf16(f), b) << std::hex << h;
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 127);
}

TEST(Half, F16EdgeCases) {
  struct Case {
    float in;
    uint16_t want;
  };
  const float max_finite_below_tie = std::nextafter(65520.0f, 0.0f);
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},
      {65519.99f, 0x7bff},
      {max_finite_below_tie, 0x7bff},
      {65520.0f, 0x7c00},  // halfway to 65536, and 0x7bff is odd: rounds up, to Inf
      {-65520.0f, 0xfc00},
      {1e6f, 0x7c00},
      {std::numeric_limits<float>::max(), 0x7c00},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
      {0x1p-14f, 0x0400},               // smallest normal
      {1023 * 0x1p-24f, 0x03ff},        // largest subnormal
      {1023.5f * 0x1p-24f, 0x0400},     // tie between them: up to the even normal
      {0x1p-24f, 0x0001},               // smallest subnormal
      {0x1p-25f, 0x0000},               // tie between 0 and 2^-24: to even 0
      {std::nextafter(0x1p-25f, 1.0f), 0x0001},
      {1.5f * 0x1p-24f, 0x0002},        // tie: to even
      {2.5f * 0x1p-24f, 0x0002},        // tie: to even
      {-3.5f * 0x1p-24f, 0x8004},
      {0x1p-26f, 0x0000},
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {-std::numeric_limits<float>::denorm_min(), 0x8000},
      {1.0f + 0x1p-11f, 0x3c00},        // tie: to even
      {1.0f + 3 * 0x1p-11f, 0x3c02},    // tie: to even
      {std::nextafter(1.0f + 0x1p-11f, 2.0f), 0x3c01},
      {2049.0f, 0x6800},                // 2048 and 2050 are neighbours; tie to 2048
      {2051.0f, 0x6802},
      {0.1f, 0x2e66},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(f32_to_f16(c.in), c.want) << std::hexfloat << c.in;
    EXPECT_EQ(ref_f32_to_f16(c.in), c.want) << "reference disagrees at " << std::hexfloat << c.in;
  }
  EXPECT_TRUE(f16_is_nan(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(f16_is_nan(f32_to_f16(f32_from_bits(0x7f800001u))));  // signalling NaN
  EXPECT_TRUE(f16_is_nan(f32_to_f16(f32_from_bits(0xffffffffu))));
}

TEST(Half, BF16EdgeCases) {
  struct Case {
    uint32_t in;  // fp32 bits
    uint16_t want;
  };
  const Case cases[] = {
      {0x00000000u, 0x0000},
      {0x80000000u, 0x8000},
      {0x3f800000u, 0x3f80},  // 1
      {0x3f808000u, 0x3f80},  // 1 + 2^-8: tie to even
      {0x3f818000u, 0x3f82},  // tie to even, upwards
      {0x3f808001u, 0x3f81},
      {0x3f807fffu, 0x3f80},
      {0x7f7f0000u, 0x7f7f},  // max finite bf16
      {0x7f7f7fffu, 0x7f7f},
      {0x7f7f8000u, 0x7f80},  // tie past max finite: to Inf
      {0x7f7fffffu, 0x7f80},  // FLT_MAX
      {0xff7fffffu, 0xff80},
      {0x7f800000u, 0x7f80},
      {0x00000001u, 0x0000},  // fp32 subnormals round on the bf16 subnormal grid
      {0x00008000u, 0x0000},  // tie: to even 0
      {0x00008001u, 0x0001},
      {0x00018000u, 0x0002},
      {0x007fffffu, 0x0080},  // largest fp32 subnormal rounds up to the smallest normal
  };
  for (const Case& c : cases) {
    const float f = f32_from_bits(c.in);
    EXPECT_EQ(f32_to_bf16(f), c.want) << std::hex << c.in;
    EXPECT_EQ(ref_f32_to_bf16(f), c.want) << "reference disagrees at " << std::hex << c.in;
  }
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(f32_from_bits(0x7f800001u))));  // payload only in low bits
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(f32_from_bits(0xff800001u))));
}

TEST(Half, F16HalfwayPoints) {
  // Every tie between neighbouring fp16 values, and the floats just either side.
  size_t n = 0;
  for (uint32_t h = 0; h <= 0x7bff; ++h) {
    const double lo = f16_value(static_cast<uint16_t>(h));
    const double hi = h < 0x7bff ? f16_value(static_cast<uint16_t>(h + 1)) : 65536.0;
    const auto mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    for (float s : {1.0f, -1.0f}) {
      const float m = s * mid;
      if (!check_f16(m) || !check_f16(std::nextafter(m, 0.0f)) ||
          !check_f16(std::nextafter(m, s * 1e30f)))
        return;
      n += 3;
    }
  }
  EXPECT_EQ(n, 6u * 0x7c00);
}

TEST(Half, BF16HalfwayPoints) {
  size_t n = 0;
  for (uint32_t h = 0; h <= 0x7f7f; ++h) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint32_t mid = sign | (h << 16) | 0x8000u;
      if (!check_bf16(f32_from_bits(mid)) || !check_bf16(f32_from_bits(mid - 1)) ||
          !check_bf16(f32_from_bits(mid + 1)))
        return;
      n += 3;
    }
  }
  EXPECT_EQ(n, 6u * 0x7f80);
}

TEST(Half, F16MatchesReferenceOnMillionsOfFloats) {
  const std::vector<float> v = sample_floats();
  ASSERT_GT(v.size(), 8'000'000u);
  for (float f : v)
    if (!check_f16(f)) return;
}

TEST(Half, BF16MatchesReferenceOnMillionsOfFloats) {
  const std::vector<float> v = sample_floats();
  for (float f : v)
    if (!check_bf16(f)) return;
}

}  // namespace
}  // namespace fdpp
