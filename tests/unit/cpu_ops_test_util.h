// Shared by the CPU ops' tests (test_cpu_ops*.cpp, one executable each): host tensors that
// own their memory, NaN-poisoned outputs, the row error metric and the fixture.
//
// The CPU reference ops against double-precision formulas written out here,
// independently of src/backend/cpu/, on odd sizes and fresh random inputs
// (fixed seeds), with every output poisoned (NaN) first so that an element the
// op forgets to write fails the check.
//
// Error metric: for each output row (a token's hidden vector, one head's
// vector, ...), max_i |got_i - ref_i| / max_i |ref_i|, and the worst row must
// be <= 1e-5. Relative to the row's largest value rather than per element:
// dot products and softmax sums have near-zero entries whose own relative
// error says nothing about the op, while the row scale is what a consumer sees.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace fdpp {
// Anonymous: each test executable includes this once; inline so that a test file that
// leaves a helper unused compiles without a warning.
namespace {

constexpr double kTol = 1e-5;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Worst error seen per op, printed at the end so the margin under kTol is visible.
inline std::map<std::string, double>& worst_seen() {
  static std::map<std::string, double> m;
  return m;
}
class ReportWorst : public ::testing::Environment {
  void TearDown() override {
    for (const auto& [op, e] : worst_seen())
      std::printf("[ worst err ] %-18s %.3g\n", op.c_str(), e);
  }
};
[[maybe_unused]] const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportWorst);

// A host tensor that owns its memory.
struct Host {
  Buffer buf;
  Tensor t;
  float* f() const { return t.ptr<float>(); }
  int32_t* i() const { return t.ptr<int32_t>(); }
};

inline Host make(DType dt, Shape s) {
  Result<Buffer> b = host_alloc(static_cast<size_t>(s.numel()) * dtype_size(dt));
  if (!b.ok()) std::abort();  // a test machine without a few MB is not worth a message
  Host h{std::move(b).value(), {}};
  h.t = h.buf.as(dt, s);
  return h;
}
inline Host nan_f32(Shape s) {
  Host h = make(DType::kF32, s);
  std::fill_n(h.f(), s.numel(), kNaN);
  return h;
}
inline Host rand_f32(Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Host h = make(DType::kF32, s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < s.numel(); ++i) h.f()[i] = u(rng);
  return h;
}
inline Host i32(const std::vector<int32_t>& v) {
  Host h = make(DType::kI32, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), h.i());
  return h;
}

// The worst row error (metric in the file comment) of got against ref, rows of row_len.
inline ::testing::AssertionResult rows_close(const std::string& op, const float* got,
                                             const std::vector<double>& ref, int64_t row_len) {
  if (ref.empty() || row_len <= 0 || ref.size() % row_len != 0)
    return ::testing::AssertionFailure() << op << ": compared nothing";
  double worst = 0.0;
  int64_t worst_row = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(ref.size()) / row_len; ++r) {
    double amax = 0.0, emax = 0.0;
    for (int64_t i = r * row_len; i < (r + 1) * row_len; ++i) {
      if (!std::isfinite(got[i]))
        return ::testing::AssertionFailure() << op << ": element " << i << " is " << got[i]
                                             << " (never written?), ref " << ref[i];
      amax = std::max(amax, std::abs(ref[i]));
      emax = std::max(emax, std::abs(got[i] - ref[i]));
    }
    const double e = amax > 0.0 ? emax / amax : (emax > 0.0 ? kInf : 0.0);
    if (e > worst) worst = e, worst_row = r;
  }
  double& w = worst_seen()[op];
  w = std::max(w, worst);
  if (worst > kTol)
    return ::testing::AssertionFailure() << op << ": row " << worst_row << " has error " << worst;
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult has_code(const Status& s, StatusCode code,
                                           const std::string& op) {
  if (s.code() != code)
    return ::testing::AssertionFailure()
           << "expected " << status_code_name(code) << ", got " << s.to_string();
  if (s.message().find(op) == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name " << op << ": " << s.message();
  return ::testing::AssertionSuccess();
}

inline bool all_nan(const float* p, int64_t n) {
  return std::all_of(p, p + n, [](float x) { return std::isnan(x); });
}

class CpuOps : public ::testing::Test {
 public:  // the check_* helpers below build caches too
  std::unique_ptr<Backend> be = make_cpu_backend();

  // A cache whose every element is NaN, so a read of anything never written shows.
  KVCache nan_cache(KVCacheLayout l) {
    Result<KVCache> c = be->alloc_kv_cache(l);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    const int64_t n = l.n_layers * l.elements_per_layer();
    std::fill_n(static_cast<float*>(c->k.data()), n, kNaN);
    std::fill_n(static_cast<float*>(c->v.data()), n, kNaN);
    return std::move(c).value();
  }
  // Random keys and values at positions [0, len) of (layer, slot), every KV head.
  static void fill_keys(KVCache& c, int layer, int slot, int len, uint64_t seed, float amp = 1) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-amp, amp);
    const KVCacheLayout& l = c.layout;
    for (int g = 0; g < l.n_kv_heads; ++g)
      for (int64_t e = 0; e < int64_t{len} * l.head_dim; ++e) {
        static_cast<float*>(c.k.data())[l.offset(layer, slot, g, 0) + e] = u(rng);
        static_cast<float*>(c.v.data())[l.offset(layer, slot, g, 0) + e] = u(rng);
      }
  }
};

inline std::vector<double> ref_linear(const float* x, const float* w, const float* y0, int64_t M,
                                      int64_t K, int64_t N) {
  std::vector<double> r(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = y0 ? y0[m * N + n] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(x[m * K + k]) * w[n * K + k];
      r[m * N + n] = s;
    }
  return r;
}

// HF inv_freq = 1 / theta^(2i / rotary_dim), in fp32 as transformers builds it.
inline Host hf_inv_freq(int rd, double theta) {
  Host f = make(DType::kF32, Shape{rd / 2});
  for (int i = 0; i < rd / 2; ++i) f.f()[i] = float(1.0 / std::pow(theta, 2.0 * i / rd));
  return f;
}

}  // namespace
}  // namespace fdpp
