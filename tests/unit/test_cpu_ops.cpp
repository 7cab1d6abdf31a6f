// The CPU reference ops (basics, KV cache, embed, rmsnorm, linear, rope) against double-
// precision formulas written out here; the method and the error metric are in
// cpu_ops_test_util.h. Attention, silu_mul, fused_linear and argmax: test_cpu_ops_attention.cpp.
#include <gtest/gtest.h>

#include "unit/cpu_ops_test_util.h"

namespace fdpp {
namespace {

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
}  // namespace
}  // namespace fdpp
