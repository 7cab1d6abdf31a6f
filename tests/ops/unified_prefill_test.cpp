// Unified-max prefill attention (design.md, Technique 1) against the CPU reference under
// flash-attention's tolerance rule: the odd-size sweep (T 1..1025, start_pos 0/37, GQA 1..8,
// head_dim 64/128 on tensor cores with fp16 or bf16 P, 8 on the generic kernel) with φ
// fitted per head to the rows (tuning/score_analysis.h); the fallback counter equals the
// rows the host's range check rejects (up to rows within rounding of a bound). Then forced
// fallbacks: φ far below (fp16 P would overflow) and far above (underflow) every row, a
// "sink" key in one head only, T = 1; the last row's max kept for row-following φ; the
// synchronized kernel keeps it too.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/cuda/attention/prefill.h"
#include "dispatch/softmax_range.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"
#include "tuning/score_analysis.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using test::round_to;

struct Problem {
  DType dt = DType::kF16;
  int T = 0, start_pos = 0, n_heads = 0, n_kv = 0, D = 0;
  float scale = 0.f;
  std::vector<float> q;  // (T, n_heads, D)
  std::vector<float> k;  // (n_kv, start_pos + T, D)
  std::vector<float> v;  // (n_kv, start_pos + T, D)
  int kv_len() const { return start_pos + T; }
  int group() const { return n_heads / n_kv; }
};

Problem make_problem(DType dt, int T, int start_pos, int n_heads, int n_kv, int D,
                     uint64_t seed) {
  Problem p{dt, T, start_pos, n_heads, n_kv, D, 1.f / std::sqrt(static_cast<float>(D))};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  p.q.resize(static_cast<size_t>(T) * n_heads * D);
  for (float& x : p.q) x = round_to(dt, 6.f * u(rng));  // scores of a few units
  p.k.resize(static_cast<size_t>(n_kv) * p.kv_len() * D);
  p.v.resize(p.k.size());
  for (float& x : p.k) x = round_to(dt, u(rng));
  for (float& x : p.v) x = round_to(dt, u(rng));
  return p;
}

// Exact reference (double) and the plain same-precision one, and every row's exact max
// (s units) with its length: (T, n_heads).
struct Reference {
  std::vector<float> ref, plain;
  std::vector<ScoreRow> rows;
};

Reference reference(const Problem& p) {
  Reference r;
  const int D = p.D;
  r.ref.resize(p.q.size());
  r.plain.resize(p.q.size());
  r.rows.resize(static_cast<size_t>(p.T) * p.n_heads);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int t = 0; t < p.T; ++t)
    for (int h = 0; h < p.n_heads; ++h) {
      const int n = p.start_pos + t + 1;
      const float* q = p.q.data() + (static_cast<size_t>(t) * p.n_heads + h) * D;
      const float* k = p.k.data() + static_cast<size_t>(h / p.group()) * p.kv_len() * D;
      const float* v = p.v.data() + static_cast<size_t>(h / p.group()) * p.kv_len() * D;
      std::vector<double> s(n);
      std::vector<float> sp(n);
      double m = -INFINITY;
      float mp = -INFINITY;
      for (int j = 0; j < n; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(q[d]) * k[static_cast<size_t>(j) * D + d];
        s[j] = dot * p.scale;
        m = std::max(m, s[j]);
        sp[j] = round_to(p.dt, round_to(p.dt, static_cast<float>(dot)) * p.scale);
        mp = std::max(mp, sp[j]);
      }
      r.rows[static_cast<size_t>(t) * p.n_heads + h] = {static_cast<float>(m), n};
      double den = 0, denp = 0;
      for (int j = 0; j < n; ++j) {
        den += (s[j] = std::exp(s[j] - m));  // s becomes the exact weight
        denp += std::exp(double(sp[j]) - mp);
      }
      for (int j = 0; j < n; ++j)  // sp becomes plain's P, rounded as it would store it
        sp[j] = round_to(p.dt, static_cast<float>(std::exp(double(sp[j]) - mp) / denp));
      float* o = r.ref.data() + (static_cast<size_t>(t) * p.n_heads + h) * D;
      float* op = r.plain.data() + (static_cast<size_t>(t) * p.n_heads + h) * D;
      std::vector<double> acc(D, 0.0);
      std::vector<float> accp(D, 0.f);
      for (int j = 0; j < n; ++j) {
        const float* vj = v + static_cast<size_t>(j) * D;
        for (int d = 0; d < D; ++d) {
          acc[d] += s[j] * vj[d];
          accp[d] += sp[j] * vj[d];
        }
      }
      for (int d = 0; d < D; ++d) {
        o[d] = static_cast<float>(acc[d] / den);
        op[d] = round_to(p.dt, accp[d]);
      }
    }
  return r;
}

struct GpuRun {
  std::vector<float> out;        // (T, n_heads, D)
  int64_t fallbacks = 0;
  std::vector<float> last_max;   // (n_heads): the row_max entries of the slot
};

// One launch in layer 0, slot 1 of a 1 × 2 cache (NaN elsewhere) with the given mode and φ.
GpuRun run_gpu(cuda::CudaBackend& be, const Problem& p, SoftmaxMode mode,
               const std::vector<float>& phi) {
  GpuRun r;
  const KVCacheLayout l{1, 2, p.n_kv, p.kv_len() + 9, p.D};
  const int slot = 1;
  std::vector<float> kh(l.elements_per_layer(), NAN), vh(kh.size(), NAN);
  for (int g = 0; g < p.n_kv; ++g)
    for (int64_t i = 0; i < int64_t{p.kv_len()} * p.D; ++i) {
      kh[l.offset(0, slot, g, 0) + i] = p.k[static_cast<size_t>(g) * p.kv_len() * p.D + i];
      vh[l.offset(0, slot, g, 0) + i] = p.v[static_cast<size_t>(g) * p.kv_len() * p.D + i];
    }
  auto cache = be.alloc_kv_cache(l);
  EXPECT_TRUE(cache.ok());
  if (!cache.ok()) return r;
  const int64_t n = l.elements_per_layer();
  const auto kb = test::encode(kh, p.dt), vb = test::encode(vh, p.dt);
  const Tensor k_all(cache->k.data(), p.dt, Device::kCUDA, {n});
  const Tensor v_all(cache->v.data(), p.dt, Device::kCUDA, {n});
  EXPECT_TRUE(be.copy_from_host(kb.data(), k_all).ok());
  EXPECT_TRUE(be.copy_from_host(vb.data(), v_all).ok());
  const Shape qs{p.T, p.n_heads, p.D};
  auto q = test::upload(be, p.q, p.dt, qs);
  auto out = test::alloc_poisoned(be, p.dt, qs);
  auto phi_dev = test::upload(be, phi, DType::kF32, {p.n_heads});
  auto rows = test::upload(be, std::vector<float>(2 * p.n_heads, NAN), DType::kF32,
                           {2, p.n_heads});
  auto counter = test::upload_i32(be, {0}, {1});
  EXPECT_TRUE(q.ok() && out.ok() && phi_dev.ok() && rows.ok() && counter.ok());
  if (!(q.ok() && out.ok() && phi_dev.ok() && rows.ok() && counter.ok())) return r;
  AttentionPrefillArgs a;
  a.q = q->t;
  a.cache = &*cache;
  a.slot = slot;
  a.start_pos = p.start_pos;
  a.scale = p.scale;
  a.out = out->t;
  a.softmax.mode = mode;
  a.softmax.phi = phi_dev->t;
  a.softmax.row_max = rows->t;
  a.softmax.fallbacks = counter->t;
  const Status st = cuda::run_attention_prefill(a, p.dt, be.props().multiProcessorCount,
                                                be.stream());
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto o = test::download(be, out->t);
  auto c = test::download_i32(be, counter->t);
  auto m = test::download(be, rows->t);
  EXPECT_TRUE(o.ok() && c.ok() && m.ok());
  if (!(o.ok() && c.ok() && m.ok())) return r;
  r.out = *o;
  r.fallbacks = (*c)[0];
  r.last_max.assign(m->begin() + p.n_heads, m->end());
  return r;
}

UnifiedType p_type(const Problem& p) {
  if (p.D != 64 && p.D != 128) return UnifiedType::kF32;  // the generic kernel: fp32 P
  return p.dt == DType::kF16 ? UnifiedType::kF16P : UnifiedType::kBF16P;
}

// Rows the check surely rejects, and rows within `slack` (log2 units) of a bound, which the
// GPU's rounding of the max may put on either side.
void expected_fallbacks(const Problem& p, const Reference& r, const std::vector<float>& phi,
                        int64_t* sure, int64_t* ambiguous) {
  *sure = *ambiguous = 0;
  const UnifiedType type = p_type(p);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ScoreRow& row = r.rows[i];
    const float x = (row.m - phi[i % p.n_heads]) * kLog2e;
    const UnifiedRange range = unified_range(type, row.len);
    const float slack = 1e-3f * (1 + std::fabs(row.m * kLog2e));
    if (std::fabs(x - range.lo) < slack || std::fabs(x - range.hi) < slack)
      ++*ambiguous;
    else
      *sure += !unified_row_in_range(type, row.len, x);
  }
}

using SweepParam = test::PrefillSweepParam;

// One case of the old UnifiedPrefillSweep.ExactAndCountsTheRowsOutOfRange: the harness's
// attention_prefill_unified cases.
void check_unified_prefill_sweep(const SweepParam& param) {
  const auto [D, dt, ratio, start_pos, T] = param;
  cuda::CudaBackendOptions bo;
  bo.activation_dtype = dt;
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto be, cuda::make_cuda_backend(bo));
  const Problem p = make_problem(dt, T, start_pos, 2 * ratio, 2, D, 4000u + T + D + ratio);
  const Reference r = reference(p);
  // φ per head fitted to its rows, as fdpp calibrate does per layer.
  std::vector<float> phi(p.n_heads);
  for (int h = 0; h < p.n_heads; ++h) {
    std::vector<ScoreRow> rows;
    for (int t = 0; t < T; ++t) rows.push_back(r.rows[static_cast<size_t>(t) * p.n_heads + h]);
    phi[h] = fit_phi(rows, p_type(p));
  }
  const GpuRun g = run_gpu(*be, p, SoftmaxMode::kUnified, phi);
  ASSERT_FALSE(g.out.empty());
  EXPECT_TRUE(test::close_by_flash_rule(g.out, r.ref, r.plain, dt, "unified prefill"));
  int64_t sure = 0, ambiguous = 0;
  expected_fallbacks(p, r, phi, &sure, &ambiguous);
  EXPECT_GE(g.fallbacks, sure);
  EXPECT_LE(g.fallbacks, sure + ambiguous);
  for (int h = 0; h < p.n_heads; ++h) {  // the last row's max, for the first decode step's φ
    const float m = r.rows[static_cast<size_t>(T - 1) * p.n_heads + h].m;
    EXPECT_NEAR(g.last_max[h], m, 1e-2 * (1 + std::fabs(m)));
  }
  // φ far below every row (fp16 P would overflow) and far above (all terms underflow):
  // every row is recomputed, exactly.
  for (float far : {-100.f, 100.f}) {
    const GpuRun f = run_gpu(*be, p, SoftmaxMode::kUnified, std::vector<float>(p.n_heads, far));
    ASSERT_FALSE(f.out.empty());
    EXPECT_TRUE(test::close_by_flash_rule(f.out, r.ref, r.plain, dt,
                                          fmt::format("unified prefill, φ {}", far)));
    EXPECT_EQ(f.fallbacks, int64_t{T} * p.n_heads) << "φ " << far;
  }
}

void add_unified_prefill_cases(std::vector<test::OpCase>& cases) {
  for (const SweepParam& param : test::prefill_sweep_params())
    cases.push_back({"attention_prefill_unified", test::prefill_sweep_shape(param),
                     std::get<1>(param),
                     [=](test::OpEnv&) { check_unified_prefill_sweep(param); }, {}});
}
FDPP_REGISTER_OP_CASES(add_unified_prefill_cases);

// A sink key (s ≈ +600 at key 0) seen only by head 0: its rows fail, the others pass; CTAs
// that mix both recompute everything exactly.
TEST(UnifiedPrefill, SinkKeyInOneHead) {
  FDPP_REQUIRE_GPU();
  for (DType dt : {DType::kF16, DType::kBF16})
    for (int D : {128, 64, 8}) {
      SCOPED_TRACE(fmt::format("{} d{}", dtype_name(dt), D));
      cuda::CudaBackendOptions bo;
      bo.activation_dtype = dt;
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto be, cuda::make_cuda_backend(bo));
      Problem p = make_problem(dt, 300, 5, 4, 2, D, 99 + D);
      const float Q = 64.f;
      for (int t = 0; t < p.T; ++t) {  // head 0: q = Q on dim 0
        float* q = p.q.data() + static_cast<size_t>(t) * p.n_heads * D;
        std::fill(q, q + D, 0.f);
        q[0] = Q;
      }
      p.k[0] = round_to(dt, 600.f / (Q * p.scale));  // key 0 of KV head 0, dim 0
      const Reference r = reference(p);
      std::vector<float> phi(p.n_heads);
      for (int h = 1; h < p.n_heads; ++h) {
        std::vector<ScoreRow> rows;
        for (int t = 0; t < p.T; ++t)
          rows.push_back(r.rows[static_cast<size_t>(t) * p.n_heads + h]);
        phi[h] = fit_phi(rows, p_type(p));
      }
      phi[0] = 0.f;
      const GpuRun g = run_gpu(*be, p, SoftmaxMode::kUnified, phi);
      ASSERT_FALSE(g.out.empty());
      EXPECT_TRUE(test::close_by_flash_rule(g.out, r.ref, r.plain, dt, "sink"));
      int64_t sure = 0, ambiguous = 0;
      expected_fallbacks(p, r, phi, &sure, &ambiguous);
      EXPECT_GE(sure, p.T);  // all of head 0's rows
      EXPECT_GE(g.fallbacks, sure);
      EXPECT_LE(g.fallbacks, sure + ambiguous);
    }
}

// The synchronized kernels keep the last row's max too (row-following φ after a sync
// prefill), and never count.
TEST(UnifiedPrefill, SynchronizedKeepsLastRowMax) {
  FDPP_REQUIRE_GPU();
  for (int D : {128, 8}) {
    cuda::CudaBackendOptions bo;
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto be, cuda::make_cuda_backend(bo));
    const Problem p = make_problem(DType::kF16, 130, 0, 4, 2, D, 5);
    const Reference r = reference(p);
    const GpuRun g = run_gpu(*be, p, SoftmaxMode::kSynchronized, std::vector<float>(4, 0.f));
    ASSERT_FALSE(g.out.empty());
    EXPECT_TRUE(test::close_by_flash_rule(g.out, r.ref, r.plain, DType::kF16, "sync"));
    EXPECT_EQ(g.fallbacks, 0);
    for (int h = 0; h < p.n_heads; ++h)
      EXPECT_NEAR(g.last_max[h], r.rows[static_cast<size_t>(p.T - 1) * p.n_heads + h].m, 1e-2);
  }
}

}  // namespace
}  // namespace fdpp
