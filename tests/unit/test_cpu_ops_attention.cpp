// The CPU reference ops (attention, silu_mul, fused_linear, argmax) against double-precision
// formulas written out here; the method and the error metric are in cpu_ops_test_util.h.
#include <gtest/gtest.h>

#include "unit/cpu_ops_test_util.h"

namespace fdpp {
namespace {

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
