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
namespace {

constexpr double kTol = 1e-5;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Worst error seen per op, printed at the end so the margin under kTol is visible.
std::map<std::string, double>& worst_seen() {
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

Host make(DType dt, Shape s) {
  Result<Buffer> b = host_alloc(static_cast<size_t>(s.numel()) * dtype_size(dt));
  if (!b.ok()) std::abort();  // a test machine without a few MB is not worth a message
  Host h{std::move(b).value(), {}};
  h.t = h.buf.as(dt, s);
  return h;
}
Host nan_f32(Shape s) {
  Host h = make(DType::kF32, s);
  std::fill_n(h.f(), s.numel(), kNaN);
  return h;
}
Host rand_f32(Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Host h = make(DType::kF32, s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < s.numel(); ++i) h.f()[i] = u(rng);
  return h;
}
Host i32(const std::vector<int32_t>& v) {
  Host h = make(DType::kI32, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), h.i());
  return h;
}

// The worst row error (metric in the file comment) of got against ref, rows of row_len.
::testing::AssertionResult rows_close(const std::string& op, const float* got,
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

::testing::AssertionResult has_code(const Status& s, StatusCode code, const std::string& op) {
  if (s.code() != code)
    return ::testing::AssertionFailure()
           << "expected " << status_code_name(code) << ", got " << s.to_string();
  if (s.message().find(op) == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name " << op << ": " << s.message();
  return ::testing::AssertionSuccess();
}

bool all_nan(const float* p, int64_t n) {
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

// ---- backend basics and the KV cache ----------------------------------------

TEST_F(CpuOps, BasicsAndCopies) {
  EXPECT_EQ(be->device(), Device::kCPU);
  EXPECT_EQ(be->activation_dtype(), DType::kF32);
  Result<Buffer> b = be->alloc(5 * sizeof(float));
  ASSERT_TRUE(b.ok());
  const Tensor t = b->as(DType::kF32, Shape{5});
  const float src[5] = {1, 2, 3, 4, 5};
  float back[5] = {};
  ASSERT_TRUE(be->copy_from_host(src, t).ok());
  ASSERT_TRUE(be->copy_to_host(t, back).ok());
  EXPECT_EQ(std::memcmp(src, back, sizeof(src)), 0);
  EXPECT_TRUE(be->synchronize().ok());
  const Tensor dev(t.data, DType::kF32, Device::kCUDA, Shape{5});
  EXPECT_TRUE(has_code(be->copy_from_host(src, dev), StatusCode::kInvalidArgument, "copy"));
  EXPECT_TRUE(has_code(be->copy_to_host(dev, back), StatusCode::kInvalidArgument, "copy"));
}

TEST_F(CpuOps, KvCacheLayoutAndViews) {
  const KVCacheLayout l{2, 3, 2, 5, 8};  // layers, slots, kv heads, capacity, head_dim
  Result<KVCache> c = be->alloc_kv_cache(l);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->dtype, DType::kF32);
  EXPECT_EQ(c->k.bytes(), size_t{2 * 3 * 2 * 5 * 8 * 4});
  EXPECT_EQ(c->v.bytes(), c->k.bytes());
  const Tensor k1 = c->k_layer(1), v1 = c->v_layer(1);
  EXPECT_EQ(k1.shape, (Shape{3, 2, 5, 8}));
  EXPECT_EQ(k1.ptr<float>(), static_cast<float*>(c->k.data()) + l.elements_per_layer());
  EXPECT_EQ(v1.ptr<float>(), static_cast<float*>(c->v.data()) + l.elements_per_layer());
  // offset() is row-major over (layer, slot, kv_head, pos, dim).
  EXPECT_EQ(l.offset(1, 2, 1, 4), ((((1 * 3 + 2) * 2 + 1) * 5 + 4) * 8));

  for (KVCacheLayout bad :
       {KVCacheLayout{0, 1, 1, 1, 1}, KVCacheLayout{1, 1, -1, 1, 1}, KVCacheLayout{1, 1, 1, 1, 0}})
    EXPECT_EQ(be->alloc_kv_cache(bad).status().code(), StatusCode::kInvalidArgument);
  const int big = std::numeric_limits<int>::max();
  EXPECT_EQ(be->alloc_kv_cache({big, big, big, big, big}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(be->alloc_kv_cache({1 << 20, 1 << 20, 1 << 20, 1, 4}).status().code(),
            StatusCode::kOutOfRange);  // 2^62 elements · 4 bytes = 2^64
}

// ---- embed --------------------------------------------------------------------

TEST_F(CpuOps, EmbedCopiesRows) {
  const int64_t V = 97, H = 72;
  for (int64_t T : {1, 2, 63}) {
    Host table = rand_f32({V, H}, 100 + T);
    std::vector<int32_t> idv(T);
    std::mt19937 rng(T);
    for (auto& id : idv) id = static_cast<int32_t>(rng() % V);
    idv[0] = static_cast<int32_t>(V - 1);  // the last row too
    Host ids = i32(idv), out = nan_f32({T, H});
    ASSERT_TRUE(be->embed(ids.t, table.t, out.t).ok());
    for (int64_t t = 0; t < T; ++t)  // a copy: exact
      ASSERT_EQ(std::memcmp(out.f() + t * H, table.f() + idv[t] * H, H * 4), 0) << "token " << t;
  }
}

TEST_F(CpuOps, EmbedErrors) {
  Host table = rand_f32({10, 4}, 1), out = nan_f32({2, 4});
  for (int32_t bad : {-1, 10, 1 << 30}) {
    Host ids = i32({3, bad});
    const Status s = be->embed(ids.t, table.t, out.t);
    EXPECT_TRUE(has_code(s, StatusCode::kOutOfRange, "embed"));
    EXPECT_NE(s.message().find(std::to_string(bad)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("10"), std::string::npos) << s.message();
    EXPECT_TRUE(all_nan(out.f(), 8)) << "an error must leave out untouched";
  }
  Host ids = i32({1, 2}), wrong = nan_f32({2, 5}), idf = nan_f32({2});
  EXPECT_TRUE(has_code(be->embed(ids.t, table.t, wrong.t), StatusCode::kInvalidArgument, "embed"));
  EXPECT_TRUE(has_code(be->embed(idf.t, table.t, out.t), StatusCode::kInvalidArgument, "embed"));
}

// ---- rmsnorm ------------------------------------------------------------------

std::vector<double> ref_rmsnorm(const float* x, const float* w, int64_t T, int64_t H, double eps) {
  std::vector<double> r(T * H);
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) ss += double(x[t * H + i]) * x[t * H + i];
    const double inv = 1.0 / std::sqrt(ss / H + eps);
    for (int64_t i = 0; i < H; ++i) r[t * H + i] = x[t * H + i] * inv * w[i];
  }
  return r;
}

TEST_F(CpuOps, RmsnormMatchesDouble) {
  uint64_t seed = 200;
  for (int64_t T : {1, 3, 8})
    for (int64_t H : {8, 72, 4104})
      for (float amp : {1e-3f, 1.0f, 1e3f}) {  // eps matters at small amplitudes
        const float eps = 1e-5f;
        Host x = rand_f32({T, H}, ++seed, -amp, amp), w = rand_f32({H}, ++seed, 0.5f, 1.5f);
        Host out = nan_f32({T, H});
        ASSERT_TRUE(be->rmsnorm(x.t, w.t, eps, out.t).ok());
        const auto ref = ref_rmsnorm(x.f(), w.f(), T, H, eps);
        ASSERT_TRUE(rows_close("rmsnorm", out.f(), ref, H)) << T << "x" << H << " amp " << amp;
        ASSERT_TRUE(be->rmsnorm(x.t, w.t, eps, x.t).ok());  // in place
        ASSERT_TRUE(rows_close("rmsnorm", x.f(), ref, H)) << "in place";
      }
}

TEST_F(CpuOps, RmsnormErrors) {
  Host x = rand_f32({3, 8}, 1), w = rand_f32({8}, 2), out = nan_f32({3, 8});
  Host w7 = rand_f32({7}, 3), out2 = nan_f32({2, 8});
  const char* op = "rmsnorm";
  EXPECT_TRUE(has_code(be->rmsnorm(x.t, w7.t, 1e-5f, out.t), StatusCode::kInvalidArgument, op));
  EXPECT_TRUE(has_code(be->rmsnorm(x.t, w.t, 1e-5f, out2.t), StatusCode::kInvalidArgument, op));
  EXPECT_TRUE(has_code(be->rmsnorm(x.t, w.t, -1.0f, out.t), StatusCode::kInvalidArgument, op));
  const Tensor half(x.t.data, DType::kF16, Device::kCPU, Shape{3, 8});
  EXPECT_TRUE(has_code(be->rmsnorm(half, w.t, 1e-5f, out.t), StatusCode::kUnsupported, op));
  // Overlapping but not identical: out shifted by one row over x.
  const Tensor shifted(x.f() + 8, DType::kF32, Device::kCPU, Shape{2, 8});
  EXPECT_TRUE(
      has_code(be->rmsnorm(x.t.rows(0, 2), w.t, 1e-5f, shifted), StatusCode::kInvalidArgument, op));
}

// ---- linear -------------------------------------------------------------------

std::vector<double> ref_linear(const float* x, const float* w, const float* y0, int64_t M,
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

TEST_F(CpuOps, LinearMatchesDouble) {
  struct MKN {
    int64_t m, k, n;
  };
  uint64_t seed = 300;
  for (MKN s : {MKN{1, 72, 72}, MKN{3, 4104, 72}, MKN{8, 72, 4104}, MKN{1, 11008, 72},
                MKN{3, 72, 11008}, MKN{8, 4104, 4104}, MKN{97, 65, 63}, MKN{2, 1, 5}}) {
    Host x = rand_f32({s.m, s.k}, ++seed), w = rand_f32({s.n, s.k}, ++seed);
    Host y = nan_f32({s.m, s.n});
    ASSERT_TRUE(be->linear(x.t, w.t, y.t, {}).ok());
    const std::string at =
        std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    ASSERT_TRUE(rows_close("linear", y.f(), ref_linear(x.f(), w.f(), nullptr, s.m, s.k, s.n), s.n))
        << at;
    // accumulate: y += x·wᵀ on top of a random residual (10x larger, as a residual stream is).
    Host y0 = rand_f32({s.m, s.n}, ++seed, -10, 10);
    Host acc = rand_f32({s.m, s.n}, seed, -10, 10);
    ASSERT_TRUE(be->linear(x.t, w.t, acc.t, {.accumulate = true}).ok());
    ASSERT_TRUE(
        rows_close("linear+acc", acc.f(), ref_linear(x.f(), w.f(), y0.f(), s.m, s.k, s.n), s.n))
        << at;
  }
}

TEST_F(CpuOps, LinearAccumulateAddsTwice) {
  Host x = rand_f32({3, 65}, 1), w = rand_f32({7, 65}, 2), y = make(DType::kF32, {3, 7});
  std::fill_n(y.f(), 21, 0.5f);
  ASSERT_TRUE(be->linear(x.t, w.t, y.t, {.accumulate = true}).ok());
  ASSERT_TRUE(be->linear(x.t, w.t, y.t, {.accumulate = true}).ok());
  auto ref = ref_linear(x.f(), w.f(), nullptr, 3, 65, 7);
  for (double& r : ref) r = 0.5 + 2 * r;
  EXPECT_TRUE(rows_close("linear+acc", y.f(), ref, 7));
}

TEST_F(CpuOps, LinearEmptyK) {  // a sum over nothing is 0; accumulate leaves y
  Host x = make(DType::kF32, {2, 0}), w = make(DType::kF32, {3, 0}), y = nan_f32({2, 3});
  ASSERT_TRUE(be->linear(x.t, w.t, y.t, {}).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.f()[i], 0.0f);
}

TEST_F(CpuOps, LinearErrors) {
  Host x = rand_f32({3, 8}, 1), w = rand_f32({5, 8}, 2), y = nan_f32({3, 5});
  Host w9 = rand_f32({5, 9}, 3), y6 = nan_f32({3, 6}), y1 = nan_f32({15});
  const char* op = "linear";
  EXPECT_TRUE(has_code(be->linear(x.t, w9.t, y.t, {}), StatusCode::kInvalidArgument, op));
  EXPECT_TRUE(has_code(be->linear(x.t, w.t, y6.t, {}), StatusCode::kInvalidArgument, op));
  EXPECT_TRUE(has_code(be->linear(x.t, w.t, y1.t, {}), StatusCode::kInvalidArgument, op));
  const Tensor wh(w.t.data, DType::kBF16, Device::kCPU, w.t.shape);
  EXPECT_TRUE(has_code(be->linear(x.t, wh, y.t, {}), StatusCode::kUnsupported, op));
  const Tensor xd(x.t.data, DType::kF32, Device::kCUDA, x.t.shape);
  EXPECT_TRUE(has_code(be->linear(xd, w.t, y.t, {}), StatusCode::kInvalidArgument, op));
  const Tensor xnull(nullptr, DType::kF32, Device::kCPU, x.t.shape);
  EXPECT_TRUE(has_code(be->linear(xnull, w.t, y.t, {}), StatusCode::kInvalidArgument, op));
  Host sq = rand_f32({3, 3}, 4), wsq = rand_f32({3, 3}, 5);
  EXPECT_TRUE(has_code(be->linear(sq.t, wsq.t, sq.t, {.accumulate = true}), StatusCode::kInvalidArgument, op));
  EXPECT_TRUE(all_nan(y.f(), 15));
}

// ---- rope_and_append_kv -------------------------------------------------------

// HF inv_freq = 1 / theta^(2i / rotary_dim), in fp32 as transformers builds it.
Host hf_inv_freq(int rd, double theta) {
  Host f = make(DType::kF32, Shape{rd / 2});
  for (int i = 0; i < rd / 2; ++i) f.f()[i] = float(1.0 / std::pow(theta, 2.0 * i / rd));
  return f;
}

// One head rotated as HF's apply_rotary_pos_emb (or GLM's interleaved pairs), in
// double except the angle: the spec forms it as the fp32 product float(pos)·inv_freq[i]
// (HF does), whose rounding at pos ~1e3 alone exceeds 1e-5 of a double angle.
void ref_rope(const float* x, int D, int rd, bool inter, int pos, const float* inv_freq,
              double* out) {
  for (int d = 0; d < D; ++d) out[d] = x[d];
  for (int i = 0; i < rd / 2; ++i) {
    const double angle = float(pos) * inv_freq[i];
    const int a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + rd / 2;
    out[a] = x[a] * std::cos(angle) - double(x[b]) * std::sin(angle);
    out[b] = x[b] * std::cos(angle) + double(x[a]) * std::sin(angle);
  }
}

struct RopeCase {
  int n_heads, n_kv, D, rd;
  bool inter;
  int T, capacity;
};

void check_rope(CpuOps* self, Backend* be, const RopeCase& c, uint64_t seed) {
  const KVCacheLayout l{2, 3, c.n_kv, c.capacity, c.D};
  KVCache cache = self->nan_cache(l);
  const int layer = seed % 2, width = (c.n_heads + 2 * c.n_kv) * c.D;
  Host qkv = rand_f32({c.T, width}, seed), q_out = nan_f32({c.T, c.n_heads, c.D});
  std::mt19937_64 rng(seed);
  std::vector<int32_t> all(c.capacity), slots(c.T);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);  // distinct positions, the last one included
  std::iter_swap(all.begin(), std::find(all.begin(), all.end(), c.capacity - 1));
  std::vector<int32_t> posv(all.begin(), all.begin() + c.T);
  for (auto& s : slots) s = static_cast<int32_t>(rng() % l.n_slots);
  Host pos = i32(posv), slot = i32(slots), inv = hf_inv_freq(c.rd, seed % 3 ? 1e4 : 5e5);

  RopeAppendArgs a{qkv.t, pos.t, slot.t, inv.t, c.rd, c.inter, &cache, layer, q_out.t};
  ASSERT_TRUE(be->rope_and_append_kv(a).ok());

  std::vector<double> rq(int64_t{c.T} * c.n_heads * c.D), rk(int64_t{c.T} * c.n_kv * c.D);
  std::vector<float> gk(rk.size());
  const float* kc = static_cast<const float*>(cache.k.data());
  const float* vc = static_cast<const float*>(cache.v.data());
  for (int t = 0; t < c.T; ++t) {
    const float* row = qkv.f() + int64_t{t} * width;
    for (int h = 0; h < c.n_heads; ++h)
      ref_rope(row + h * c.D, c.D, c.rd, c.inter, posv[t], inv.f(),
               &rq[(int64_t{t} * c.n_heads + h) * c.D]);
    for (int g = 0; g < c.n_kv; ++g) {
      const float* k = row + (c.n_heads + g) * c.D;
      const float* v = row + (c.n_heads + c.n_kv + g) * c.D;
      const int64_t at = l.offset(layer, slots[t], g, posv[t]);
      const int64_t r = (int64_t{t} * c.n_kv + g) * c.D;
      ref_rope(k, c.D, c.rd, c.inter, posv[t], inv.f(), &rk[r]);
      std::copy(kc + at, kc + at + c.D, gk.begin() + r);
      ASSERT_EQ(std::memcmp(vc + at, v, c.D * 4), 0) << "v is stored raw, token " << t;
      // Dims past rotary_dim pass through bit for bit.
      ASSERT_EQ(std::memcmp(kc + at + c.rd, k + c.rd, (c.D - c.rd) * 4), 0);
    }
  }
  ASSERT_TRUE(rows_close("rope q", q_out.f(), rq, c.D));
  ASSERT_TRUE(rows_close("rope k", gk.data(), rk, c.D));
  // Nothing else in the cache was touched.
  const int64_t n = l.n_layers * l.elements_per_layer(), written = int64_t{c.T} * c.n_kv * c.D;
  EXPECT_EQ(std::count_if(kc, kc + n, [](float x) { return std::isnan(x); }), n - written);
  EXPECT_EQ(std::count_if(vc, vc + n, [](float x) { return std::isnan(x); }), n - written);
}

TEST_F(CpuOps, RopeAppendMatchesReference) {
  struct Heads {
    int q, kv;
  };
  uint64_t seed = 400;
  for (Heads h : {Heads{4, 4}, Heads{4, 2}, Heads{8, 2}, Heads{8, 1}})
    for (int D : {8, 64, 128})
      for (int rd : D == 64 ? std::vector{D, D / 2, 16} : std::vector{D, D / 2})
        for (bool inter : {false, true})
          for (int T : {1, 2, 65}) {
            SCOPED_TRACE(testing::Message() << "heads " << h.q << "/" << h.kv << " D " << D
                                            << " rd " << rd << " inter " << inter << " T " << T);
            check_rope(this, be.get(), {h.q, h.kv, D, rd, inter, T, 1100}, ++seed);
          }
}

TEST_F(CpuOps, RopeAppendLargePositions) {  // fp32 angle semantics out to 128K positions
  for (bool inter : {false, true})
    check_rope(this, be.get(), {2, 1, 8, 8, inter, 63, 131072}, 7 + inter);
}

TEST_F(CpuOps, RopeAppendErrors) {
  const KVCacheLayout l{2, 3, 2, 16, 8};
  KVCache cache = nan_cache(l);
  Host qkv = rand_f32({2, (4 + 4) * 8}, 1), q_out = nan_f32({2, 4, 8});
  Host pos = i32({0, 5}), slot = i32({1, 2}), inv = hf_inv_freq(8, 1e4);
  const RopeAppendArgs ok{qkv.t, pos.t, slot.t, inv.t, 8, false, &cache, 1, q_out.t};
  Host bad_pos = i32({0, 16}), neg_pos = i32({-1, 0}), bad_slot = i32({3, 0});
  Host qkv_w = rand_f32({2, 63}, 2), q_out_h = nan_f32({2, 3, 8}), inv3 = hf_inv_freq(6, 1e4);
  Host pos3 = i32({0, 1, 2});
  struct Bad {
    const char* what;
    RopeAppendArgs a;
    StatusCode code;
  };
  std::vector<Bad> bad;
  auto with = [&](const char* what, StatusCode code, auto mutate) {
    RopeAppendArgs a = ok;
    mutate(a);
    bad.push_back({what, a, code});
  };
  using SC = StatusCode;
  with("position = capacity", SC::kOutOfRange, [&](auto& a) { a.positions = bad_pos.t; });
  with("negative position", SC::kOutOfRange, [&](auto& a) { a.positions = neg_pos.t; });
  with("slot = n_slots", SC::kOutOfRange, [&](auto& a) { a.slots = bad_slot.t; });
  with("layer = n_layers", SC::kOutOfRange, [&](auto& a) { a.layer = 2; });
  with("qkv width", SC::kInvalidArgument, [&](auto& a) { a.qkv = qkv_w.t; });
  with("q_out heads vs qkv", SC::kInvalidArgument, [&](auto& a) { a.q_out = q_out_h.t; });
  with("positions length", SC::kInvalidArgument, [&](auto& a) { a.positions = pos3.t; });
  with("odd rotary_dim", SC::kInvalidArgument, [&](auto& a) { a.rotary_dim = 7; });
  with("rotary_dim > head_dim", SC::kInvalidArgument, [&](auto& a) { a.rotary_dim = 10; });
  with("inv_freq size", SC::kInvalidArgument, [&](auto& a) { a.inv_freq = inv3.t; });
  with("no cache", SC::kInvalidArgument, [&](auto& a) { a.cache = nullptr; });
  with("positions f32", SC::kInvalidArgument, [&](auto& a) { a.positions.dtype = DType::kF32; });
  for (const Bad& b : bad) {
    EXPECT_TRUE(has_code(be->rope_and_append_kv(b.a), b.code, "rope_and_append_kv")) << b.what;
    EXPECT_TRUE(all_nan(q_out.f(), 64)) << b.what << " wrote q_out";
    EXPECT_TRUE(all_nan(static_cast<float*>(cache.k.data()), 2 * l.elements_per_layer()))
        << b.what << " wrote the cache";
  }
  EXPECT_TRUE(be->rope_and_append_kv(ok).ok());
}

// ---- attention ------------------------------------------------------------------

// softmax(scale · K q) V over n keys, in double, the textbook way.
void ref_attend(const float* q, const float* k, const float* v, int n, int D, double scale,
                double* out) {
  std::vector<double> s(n);
  for (int j = 0; j < n; ++j) {
    s[j] = 0;
    for (int d = 0; d < D; ++d) s[j] += double(q[d]) * k[int64_t{j} * D + d];
    s[j] *= scale;
  }
  const double m = *std::max_element(s.begin(), s.end());
  double den = 0;
  for (double& x : s) den += (x = std::exp(x - m));
  for (int d = 0; d < D; ++d) {
    double acc = 0;
    for (int j = 0; j < n; ++j) acc += s[j] * v[int64_t{j} * D + d];
    out[d] = acc / den;
  }
}

struct AttnCase {
  int B, n_heads, n_kv, D;
};

void check_decode(CpuOps* self, Backend* be, const AttnCase& c, uint64_t seed, float amp = 1) {
  const KVCacheLayout l{2, 9, c.n_kv, 100, c.D};
  KVCache cache = self->nan_cache(l);
  const int layer = 1, lens_pool[] = {1, 2, 63, 65, 97, 100};
  std::vector<int32_t> slots(c.B), lens(c.B);
  for (int b = 0; b < c.B; ++b) {
    slots[b] = (b * 5 + 2) % l.n_slots;  // scattered, distinct for B <= 9
    lens[b] = lens_pool[(b + seed) % 6];
    CpuOps::fill_keys(cache, layer, slots[b], lens[b], seed * 31 + b, amp);
  }
  Host q = rand_f32({c.B, c.n_heads, c.D}, seed, -amp, amp), out = nan_f32({c.B, c.n_heads, c.D});
  Host slot = i32(slots), len = i32(lens);
  const float scale = 1.0f / std::sqrt(float(c.D));
  AttentionDecodeArgs a{q.t, &cache, layer, slot.t, len.t, 100, scale, out.t};
  ASSERT_TRUE(be->attention_decode(a).ok());

  std::vector<double> ref(int64_t{c.B} * c.n_heads * c.D);
  const int group = c.n_heads / c.n_kv;  // HF repeat_kv: query head h reads KV head h / group
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.n_heads; ++h) {
      const int64_t at = l.offset(layer, slots[b], h / group, 0), row = (b * c.n_heads + h) * c.D;
      ref_attend(q.f() + row, static_cast<float*>(cache.k.data()) + at,
                 static_cast<float*>(cache.v.data()) + at, lens[b], c.D, scale, &ref[row]);
    }
  ASSERT_TRUE(rows_close("attention_decode", out.f(), ref, c.D));
}

TEST_F(CpuOps, AttentionDecodeMatchesDouble) {
  uint64_t seed = 500;
  for (int B : {1, 3, 8})
    for (int ratio : {1, 2, 4, 8})
      for (int D : {8, 64, 128}) {
        SCOPED_TRACE(testing::Message() << "B " << B << " ratio " << ratio << " D " << D);
        check_decode(this, be.get(), {B, 2 * ratio, 2, D}, ++seed);
      }
}

TEST_F(CpuOps, AttentionDecodeLargeScores) {
  // Scores up to the hundreds (amp 16) and thousands (amp 64): e^s overflows
  // fp32 past 88, and double past 709, unless the max is subtracted first.
  for (float amp : {4.0f, 16.0f, 64.0f}) check_decode(this, be.get(), {3, 8, 2, 64}, 77, amp);
}

TEST_F(CpuOps, AttentionGqaHeadsShareKeys) {
  // 8 query heads, 2 KV heads: heads 0-3 read KV head 0, heads 4-7 KV head 1.
  const KVCacheLayout l{1, 1, 2, 20, 16};
  KVCache cache = nan_cache(l);
  fill_keys(cache, 0, 0, 20, 3);
  Host q = make(DType::kF32, {1, 8, 16}), slot = i32({0}), len = i32({20});
  Host q1 = rand_f32({2, 16}, 4);  // one query vector per group
  for (int h = 0; h < 8; ++h) std::copy_n(q1.f() + (h / 4) * 16, 16, q.f() + h * 16);
  Host out = nan_f32({1, 8, 16}), out2 = nan_f32({1, 8, 16});
  AttentionDecodeArgs a{q.t, &cache, 0, slot.t, len.t, 20, 0.25f, out.t};
  ASSERT_TRUE(be->attention_decode(a).ok());
  for (int h = 1; h < 8; ++h)  // same query, same keys: identical bits
    EXPECT_EQ(std::memcmp(out.f() + h * 16, out.f() + (h / 4 * 4) * 16, 64), 0) << "head " << h;
  EXPECT_NE(std::memcmp(out.f(), out.f() + 4 * 16, 64), 0);
  // Changing KV head 1's values changes heads 4-7 only.
  float* v1 = static_cast<float*>(cache.v.data()) + l.offset(0, 0, 1, 0);
  for (int e = 0; e < 20 * 16; ++e) v1[e] += 1.0f;
  a.out = out2.t;
  ASSERT_TRUE(be->attention_decode(a).ok());
  EXPECT_EQ(std::memcmp(out.f(), out2.f(), 4 * 64), 0) << "heads 0-3 must not read KV head 1";
  for (int h = 4; h < 8; ++h)
    EXPECT_NE(std::memcmp(out.f() + h * 16, out2.f() + h * 16, 64), 0) << "head " << h;
}

TEST_F(CpuOps, AttentionPrefillMatchesDouble) {
  uint64_t seed = 600;
  for (int T : {1, 2, 63, 65, 97})
    for (int start : {0, 3})
      for (int ratio : {1, 2, 4, 8})
        for (int D : {8, 64, 128}) {
          SCOPED_TRACE(testing::Message()
                       << "T " << T << " start " << start << " ratio " << ratio << " D " << D);
          const int n_kv = ratio == 8 ? 1 : 2, n_heads = n_kv * ratio, slot = 1, layer = 1;
          const KVCacheLayout l{2, 3, n_kv, 128, D};
          KVCache cache = nan_cache(l);
          // Keys past start+T stay NaN: causal masking must not read them.
          fill_keys(cache, layer, slot, start + T, ++seed);
          Host q = rand_f32({T, n_heads, D}, seed), out = nan_f32({T, n_heads, D});
          const float scale = 1.0f / std::sqrt(float(D));
          AttentionPrefillArgs a{q.t, &cache, layer, slot, start, scale, out.t};
          ASSERT_TRUE(be->attention_prefill(a).ok());
          std::vector<double> ref(int64_t{T} * n_heads * D);
          for (int i = 0; i < T; ++i)
            for (int h = 0; h < n_heads; ++h) {
              const int64_t at = l.offset(layer, slot, h / ratio, 0), row = (i * n_heads + h) * D;
              ref_attend(q.f() + row, static_cast<float*>(cache.k.data()) + at,
                         static_cast<float*>(cache.v.data()) + at, start + i + 1, D, scale,
                         &ref[row]);
            }
          ASSERT_TRUE(rows_close("attention_prefill", out.f(), ref, D));
        }
}

TEST_F(CpuOps, DecodeEqualsPrefillRows) {
  // The real flow: rope_and_append_kv fills slot 2 in two chunks (a chunked
  // prefill); prefill attention of the second chunk must equal decode attention
  // of each of its tokens with length start+i+1 (row T-1: the next decode step).
  const int H = 8, n_kv = 2, D = 64, start = 40, T = 25;
  const KVCacheLayout l{1, 3, n_kv, 80, D};
  KVCache cache = nan_cache(l);
  Host inv = hf_inv_freq(D, 1e4);
  Host q_all = nan_f32({start + T, H, D});
  for (auto [p0, n] : {std::pair{0, start}, std::pair{start, T}}) {
    Host qkv = rand_f32({n, (H + 2 * n_kv) * D}, 900 + p0);
    std::vector<int32_t> pv(n), sv(n, 2);
    std::iota(pv.begin(), pv.end(), p0);
    Host pos = i32(pv), slot = i32(sv);
    RopeAppendArgs r{qkv.t, pos.t, slot.t, inv.t, D, false, &cache, 0, q_all.t.rows(p0, p0 + n)};
    ASSERT_TRUE(be->rope_and_append_kv(r).ok());
  }
  const Tensor q = q_all.t.rows(start, start + T);
  Host out_p = nan_f32({T, H, D}), out_d = nan_f32({T, H, D});
  ASSERT_TRUE(be->attention_prefill({q, &cache, 0, 2, start, 0.125f, out_p.t}).ok());
  std::vector<int32_t> lens(T);
  std::iota(lens.begin(), lens.end(), start + 1);
  Host slots = i32(std::vector<int32_t>(T, 2)), len = i32(lens);
  ASSERT_TRUE(
      be->attention_decode({q, &cache, 0, slots.t, len.t, start + T, 0.125f, out_d.t}).ok());
  const std::vector<double> ref(out_p.f(), out_p.f() + int64_t{T} * H * D);
  EXPECT_TRUE(rows_close("decode vs prefill", out_d.f(), ref, D));
}

TEST_F(CpuOps, AttentionErrors) {
  const KVCacheLayout l{2, 3, 2, 16, 8};
  KVCache cache = nan_cache(l);
  fill_keys(cache, 0, 1, 16, 1);
  Host q = rand_f32({2, 4, 8}, 2), out = nan_f32({2, 4, 8});
  Host slot = i32({1, 1}), len = i32({3, 16});
  const AttentionDecodeArgs ok{q.t, &cache, 0, slot.t, len.t, 16, 0.3f, out.t};
  ASSERT_TRUE(be->attention_decode(ok).ok());
  Host len0 = i32({0, 3}), len17 = i32({3, 17}), slot3 = i32({3, 1}), slotn = i32({-1, 1});
  Host q3 = rand_f32({2, 3, 8}, 3), out3 = nan_f32({2, 3, 8}), q9 = rand_f32({2, 4, 9}, 4);
  Host len1 = i32({3});
  using SC = StatusCode;
  struct Bad {
    const char* what;
    AttentionDecodeArgs a;
    SC code;
  };
  std::vector<Bad> bad;
  auto with = [&](const char* what, SC code, auto mutate) {
    AttentionDecodeArgs a = ok;
    mutate(a);
    bad.push_back({what, a, code});
  };
  with("length 0", SC::kOutOfRange, [&](auto& a) { a.lengths = len0.t; });
  with("length > capacity", SC::kOutOfRange, [&](auto& a) { a.lengths = len17.t; });
  with("length > max_length", SC::kOutOfRange, [&](auto& a) { a.max_length = 15; });
  with("slot = n_slots", SC::kOutOfRange, [&](auto& a) { a.slots = slot3.t; });
  with("negative slot", SC::kOutOfRange, [&](auto& a) { a.slots = slotn.t; });
  with("layer", SC::kOutOfRange, [&](auto& a) { a.layer = -1; });
  with("heads not a multiple of kv heads", SC::kInvalidArgument, [&](auto& a) {
    a.q = q3.t;
    a.out = out3.t;
  });
  with("head_dim", SC::kInvalidArgument, [&](auto& a) { a.q = q9.t; });
  with("lengths size", SC::kInvalidArgument, [&](auto& a) { a.lengths = len1.t; });
  with("out aliases q", SC::kInvalidArgument, [&](auto& a) { a.out = q.t; });
  with("no cache", SC::kInvalidArgument, [&](auto& a) { a.cache = nullptr; });
  for (const Bad& b : bad)
    EXPECT_TRUE(has_code(be->attention_decode(b.a), b.code, "attention_decode")) << b.what;

  const AttentionPrefillArgs pok{q.t, &cache, 0, 1, 14, 0.3f, out.t};
  ASSERT_TRUE(be->attention_prefill(pok).ok());
  for (auto [what, start, slot_i] :
       {std::tuple{"past capacity", 15, 1}, std::tuple{"negative start", -1, 1},
        std::tuple{"slot", 0, 3}}) {
    AttentionPrefillArgs a = pok;
    a.start_pos = start;
    a.slot = slot_i;
    EXPECT_TRUE(has_code(be->attention_prefill(a), SC::kOutOfRange, "attention_prefill")) << what;
  }
  AttentionPrefillArgs a = pok;
  a.q = q3.t;
  a.out = out3.t;
  EXPECT_TRUE(has_code(be->attention_prefill(a), SC::kInvalidArgument, "attention_prefill"));
}

// ---- silu_mul -------------------------------------------------------------------

TEST_F(CpuOps, SiluMulMatchesDouble) {
  uint64_t seed = 700;
  for (int64_t M : {1, 3, 8})
    for (int64_t F : {8, 72, 11008}) {
      Host gu = rand_f32({M, 2 * F}, ++seed, -20, 20), out = nan_f32({M, F});
      ASSERT_TRUE(be->silu_mul(gu.t, out.t).ok());
      std::vector<double> ref(M * F);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t f = 0; f < F; ++f) {
          const double g = gu.f()[m * 2 * F + f], u = gu.f()[m * 2 * F + F + f];
          ref[m * F + f] = g / (1 + std::exp(-g)) * u;
        }
      ASSERT_TRUE(rows_close("silu_mul", out.f(), ref, F)) << M << "x" << F;
    }
}

TEST_F(CpuOps, SiluMulExtremes) {
  // exp(-g) overflows fp32 below g = -88: the result must be ~0, never NaN.
  Host gu = make(DType::kF32, {1, 10}), out = nan_f32({1, 5});
  const float g[5] = {-1000.0f, -100.0f, -88.8f, 100.0f, 1000.0f};
  for (int f = 0; f < 5; ++f) gu.f()[f] = g[f], gu.f()[5 + f] = 2.0f;
  ASSERT_TRUE(be->silu_mul(gu.t, out.t).ok());
  for (int f = 0; f < 3; ++f) EXPECT_LT(std::abs(out.f()[f]), 1e-30f) << g[f];
  EXPECT_EQ(out.f()[3], 200.0f);
  EXPECT_EQ(out.f()[4], 2000.0f);
}

TEST_F(CpuOps, SiluMulErrors) {
  Host gu = rand_f32({3, 8}, 1), odd = rand_f32({3, 7}, 2), out = nan_f32({3, 4});
  Host out5 = nan_f32({3, 5});
  EXPECT_TRUE(has_code(be->silu_mul(odd.t, out.t), StatusCode::kInvalidArgument, "silu_mul"));
  EXPECT_TRUE(has_code(be->silu_mul(gu.t, out5.t), StatusCode::kInvalidArgument, "silu_mul"));
  const Tensor inside(gu.t.data, DType::kF32, Device::kCPU, Shape{3, 4});  // out within gate_up
  EXPECT_TRUE(has_code(be->silu_mul(gu.t, inside), StatusCode::kInvalidArgument, "silu_mul"));
}

// ---- fused_linear (Backend's default: the op into scratch, then linear) ----------

TEST_F(CpuOps, FusedLinearIsTheOpThenTheGemm) {
  const int64_t M = 3, K = 72, N = 5;
  Host x = rand_f32({M, K}, 801, -3, 3), gu = rand_f32({M, 2 * K}, 802, -3, 3);
  Host nw = rand_f32({K}, 803, 0.5f, 1.5f), w = rand_f32({N, K}, 804), scratch = nan_f32({M, K});
  Host y = nan_f32({M, N});
  // rmsnorm: y = (x / rms(x) · nw) · wᵀ
  ASSERT_TRUE(
      be->fused_linear(x.t, LinearPrologue::rms_norm(nw.t, 1e-5f, scratch.t), w.t, y.t, {}).ok());
  std::vector<float> h(M * K);
  for (int64_t m = 0; m < M; ++m) {
    double ss = 0;
    for (int64_t k = 0; k < K; ++k) ss += double(x.f()[m * K + k]) * x.f()[m * K + k];
    const double r = 1 / std::sqrt(ss / K + 1e-5);
    for (int64_t k = 0; k < K; ++k) h[m * K + k] = static_cast<float>(x.f()[m * K + k] * r * nw.f()[k]);
  }
  EXPECT_TRUE(rows_close("fused_linear rmsnorm", y.f(), ref_linear(h.data(), w.f(), nullptr, M, K, N), N));
  // silu_mul: y = (silu(gate) · up) · wᵀ
  ASSERT_TRUE(be->fused_linear(gu.t, LinearPrologue::silu_mul(scratch.t), w.t, y.t, {}).ok());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const double g = gu.f()[m * 2 * K + k], u = gu.f()[m * 2 * K + K + k];
      h[m * K + k] = static_cast<float>(g / (1 + std::exp(-g)) * u);
    }
  EXPECT_TRUE(rows_close("fused_linear silu_mul", y.f(), ref_linear(h.data(), w.f(), nullptr, M, K, N), N));
  // No prologue: linear itself (scratch unused).
  ASSERT_TRUE(be->fused_linear(x.t, LinearPrologue{}, w.t, y.t, {}).ok());
  EXPECT_TRUE(rows_close("fused_linear", y.f(), ref_linear(x.f(), w.f(), nullptr, M, K, N), N));
  // The op's errors come back: a scratch of the wrong shape, a norm weight of the wrong length.
  Host wide = nan_f32({M, K + 1});
  EXPECT_TRUE(has_code(
      be->fused_linear(x.t, LinearPrologue::rms_norm(nw.t, 1e-5f, wide.t), w.t, y.t, {}),
      StatusCode::kInvalidArgument, "rmsnorm"));
  EXPECT_TRUE(has_code(be->fused_linear(gu.t, LinearPrologue::silu_mul(wide.t), w.t, y.t, {}),
                       StatusCode::kInvalidArgument, "silu_mul"));
}

// ---- argmax -------------------------------------------------------------------

TEST_F(CpuOps, ArgmaxRandom) {
  uint64_t seed = 800;
  for (int64_t B : {1, 3, 8})
    for (int64_t V : {1, 2, 97, 32000}) {
      Host l = rand_f32({B, V}, ++seed, -10, 10), ids = make(DType::kI32, {B});
      std::fill_n(ids.i(), B, -7);
      ASSERT_TRUE(be->argmax(l.t, ids.t).ok());
      for (int64_t b = 0; b < B; ++b) {
        int64_t best = 0;
        for (int64_t v = 1; v < V; ++v)
          if (l.f()[b * V + v] > l.f()[b * V + best]) best = v;
        ASSERT_EQ(ids.i()[b], best) << B << "x" << V << " row " << b;
      }
    }
}

TEST_F(CpuOps, ArgmaxTiesNanInf) {
  const std::vector<std::vector<float>> rows = {
      {1, 3, 3, 2},                  // tie: the lowest index
      {kNaN, 1, 2, kNaN},            // NaN is never the max
      {kNaN, kNaN, kNaN, kNaN},      // nothing comparable: 0
      {-kInf, -kInf, -kInf, -kInf},  // all equal: 0
      {0, kInf, kInf, kNaN},         // +inf is a value like any other
      {2, 2, 2, 2},
  };
  const std::vector<int32_t> want = {1, 2, 0, 0, 1, 0};
  Host l = make(DType::kF32, {6, 4}), ids = make(DType::kI32, {6});
  for (int r = 0; r < 6; ++r) std::copy(rows[r].begin(), rows[r].end(), l.f() + r * 4);
  ASSERT_TRUE(be->argmax(l.t, ids.t).ok());
  for (int r = 0; r < 6; ++r) EXPECT_EQ(ids.i()[r], want[r]) << "row " << r;
}

TEST_F(CpuOps, ArgmaxErrors) {
  Host l = rand_f32({3, 5}, 1), ids = make(DType::kI32, {3}), ids2 = make(DType::kI32, {2});
  Host idf = nan_f32({3}), empty = make(DType::kF32, {3, 0});
  EXPECT_TRUE(has_code(be->argmax(l.t, ids2.t), StatusCode::kInvalidArgument, "argmax"));
  EXPECT_TRUE(has_code(be->argmax(l.t, idf.t), StatusCode::kInvalidArgument, "argmax"));
  EXPECT_TRUE(has_code(be->argmax(empty.t, ids.t), StatusCode::kInvalidArgument, "argmax"));
}

}  // namespace
}  // namespace fdpp
