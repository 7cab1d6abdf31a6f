// The CPU reference ops of the OPT family (layernorm, embed_add, activation) and the
// linear bias against double-precision formulas written out here, on odd sizes, with
// outputs poisoned (NaN) first; in-place use; argument errors. Error metric as in
// test_cpu_ops.cpp: per row, max |got - ref| / max |ref| <= 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"

namespace fdpp {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Host {
  std::vector<float> v;
  Tensor t;
};
Host host(std::vector<float> v, Shape s) {
  Host h{std::move(v), {}};
  h.t = Tensor(h.v.data(), DType::kF32, Device::kCPU, s);
  return h;
}
Host rand_f32(Shape s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (float& x : v) x = u(rng);
  return host(std::move(v), s);
}
Host nan_f32(Shape s) { return host(std::vector<float>(static_cast<size_t>(s.numel()), kNaN), s); }

::testing::AssertionResult rows_close(const std::vector<float>& got, const std::vector<double>& ref,
                                      int64_t row) {
  if (ref.empty() || got.size() != ref.size())
    return ::testing::AssertionFailure() << "compared nothing";
  for (size_t r = 0; r < ref.size() / row; ++r) {
    double amax = 0, emax = 0;
    for (size_t i = r * row; i < (r + 1) * row; ++i) {
      if (!std::isfinite(got[i]))
        return ::testing::AssertionFailure() << "element " << i << " is " << got[i];
      amax = std::max(amax, std::abs(ref[i]));
      emax = std::max(emax, std::abs(got[i] - ref[i]));
    }
    if (emax > 1e-5 * std::max(amax, 1e-30))
      return ::testing::AssertionFailure() << "row " << r << " error " << emax / amax;
  }
  return ::testing::AssertionSuccess();
}

std::vector<double> layernorm_ref(const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& b, int64_t H, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / H; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < H; ++i) mean += x[r * H + i];
    mean /= H;
    for (int64_t i = 0; i < H; ++i) var += std::pow(x[r * H + i] - mean, 2);
    var /= H;
    for (int64_t i = 0; i < H; ++i)
      y[r * H + i] = (x[r * H + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return y;
}

TEST(CpuFamilyOps, LayerNormOnOddSizesAndInPlace) {
  auto be = make_cpu_backend();
  uint64_t seed = 1;
  for (int64_t T : {1, 3, 7})
    for (int64_t H : {1, 5, 33, 257, 1031}) {
      // A large common offset: the variance must not cancel (OPT's residual stream).
      Host x = rand_f32({T, H}, seed++, 90.f, 110.f), w = rand_f32({H}, seed++, 0.5f, 1.5f),
           b = rand_f32({H}, seed++), out = nan_f32({T, H});
      const auto ref = layernorm_ref(x.v, w.v, b.v, H, 1e-5);
      ASSERT_TRUE(be->layernorm(x.t, w.t, b.t, 1e-5f, out.t).ok());
      if (H > 1) {
        EXPECT_TRUE(rows_close(out.v, ref, H)) << "T " << T << " H " << H;
      } else {  // every row normalises to exactly the bias
        for (int64_t t = 0; t < T; ++t) EXPECT_FLOAT_EQ(out.v[t], b.v[0]);
      }
      ASSERT_TRUE(be->layernorm(x.t, w.t, b.t, 1e-5f, x.t).ok());  // in place
      EXPECT_EQ(x.v, out.v);
    }
  Host x = rand_f32({2, 8}, 9), w = rand_f32({8}, 10), b = rand_f32({7}, 11), out = nan_f32({2, 8});
  const Status bad_bias = be->layernorm(x.t, w.t, b.t, 1e-5f, out.t);
  EXPECT_EQ(bad_bias.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_bias.message().find("bias"), std::string::npos) << bad_bias.message();
  Host b8 = rand_f32({8}, 12);
  EXPECT_EQ(be->layernorm(x.t, w.t, b8.t, -1.f, out.t).code(), StatusCode::kInvalidArgument);
  // A partial overlap of out and x is refused (in place is the only aliasing allowed).
  Host big = rand_f32({3, 8}, 13);
  EXPECT_EQ(be->layernorm(big.t.rows(0, 2), w.t, b8.t, 1e-5f, big.t.rows(1, 3)).code(),
            StatusCode::kInvalidArgument);
}

TEST(CpuFamilyOps, EmbedAddAddsTheRowsAndChecksIdsFirst) {
  auto be = make_cpu_backend();
  const int64_t V = 11, H = 13;
  Host table = rand_f32({V, H}, 21), out = rand_f32({4, H}, 22);
  const std::vector<float> before = out.v;
  std::vector<int32_t> ids = {0, 10, 3, 3};
  Tensor idt(ids.data(), DType::kI32, Device::kCPU, {4});
  ASSERT_TRUE(be->embed_add(idt, table.t, out.t).ok());
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t i = 0; i < H; ++i)
      EXPECT_EQ(out.v[t * H + i], before[t * H + i] + table.v[ids[t] * H + i]);
  std::vector<int32_t> bad = {1, 11};
  Tensor badt(bad.data(), DType::kI32, Device::kCPU, {2});
  const std::vector<float> kept = out.v;
  const Status s = be->embed_add(badt, table.t, out.t.rows(0, 2));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("11"), std::string::npos);
  EXPECT_EQ(out.v, kept) << "an error must leave out untouched";
}

TEST(CpuFamilyOps, ReluAndGelu) {
  auto be = make_cpu_backend();
  for (int64_t n : {1, 7, 1000}) {
    Host x = rand_f32({3, n}, 30 + n, -6.f, 6.f), out = nan_f32({3, n});
    ASSERT_TRUE(be->activation(x.t, out.t, Activation::kRelu).ok());
    for (size_t i = 0; i < x.v.size(); ++i) EXPECT_EQ(out.v[i], x.v[i] > 0 ? x.v[i] : 0.f);
    ASSERT_TRUE(be->activation(x.t, out.t, Activation::kGelu).ok());
    std::vector<double> ref(x.v.size());
    for (size_t i = 0; i < x.v.size(); ++i)
      ref[i] = 0.5 * x.v[i] * (1.0 + std::erf(x.v[i] / std::sqrt(2.0)));
    EXPECT_TRUE(rows_close(out.v, ref, n));
    ASSERT_TRUE(be->activation(x.t, x.t, Activation::kGelu).ok());  // in place
    EXPECT_EQ(x.v, out.v);
  }
  Host special = host({kNaN, -0.f, -1e30f, 1e30f}, {1, 4}), out = nan_f32({1, 4});
  ASSERT_TRUE(be->activation(special.t, out.t, Activation::kRelu).ok());
  EXPECT_TRUE(std::isnan(out.v[0])) << "relu(NaN) is NaN, as in torch";
  EXPECT_EQ(out.v[2], 0.f);
  EXPECT_EQ(out.v[3], 1e30f);
  Host wrong = nan_f32({1, 5});
  EXPECT_EQ(be->activation(special.t, wrong.t, Activation::kRelu).code(),
            StatusCode::kInvalidArgument);
}

TEST(CpuFamilyOps, LinearBiasWithAndWithoutAccumulate) {
  auto be = make_cpu_backend();
  const int64_t M = 5, K = 19, N = 7;
  Host x = rand_f32({M, K}, 41), w = rand_f32({N, K}, 42), b = rand_f32({N}, 43),
       y = rand_f32({M, N}, 44);
  const std::vector<float> y0 = y.v;
  std::vector<double> ref(M * N), acc(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b.v[n];
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(x.v[m * K + k]) * w.v[n * K + k];
      ref[m * N + n] = s;
      acc[m * N + n] = s + y0[m * N + n];
    }
  ASSERT_TRUE(be->linear(x.t, w.t, y.t, {.accumulate = true, .bias = b.t}).ok());
  EXPECT_TRUE(rows_close(y.v, acc, N));
  ASSERT_TRUE(be->linear(x.t, w.t, y.t, {.bias = b.t}).ok());
  EXPECT_TRUE(rows_close(y.v, ref, N));
  Host b6 = rand_f32({6}, 45);
  EXPECT_EQ(be->linear(x.t, w.t, y.t, {.bias = b6.t}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fdpp
