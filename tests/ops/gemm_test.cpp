// The three GEMM implementations behind linear() — ImplA gemv, every ImplB
// flat GEMM configuration, ImplC cuBLASLt — forced one by one against a
// double-precision CPU reference, in f16 and bf16, with N and K that are not
// multiples of any tile, every epilogue (accumulate, bias), and split-K both
// as planned and forced.
//  - Integer-valued inputs: every product and partial sum is an integer below
//    2^24 (exact in fp32) and every output an integer of magnitude <= 256
//    (exact in bf16 and f16), so the result must match bit for bit.
//  - Random inputs: flash-attention's rule against the fp32-accumulating plain GEMM.
// Outputs are poisoned (0xFF = NaN) unless accumulating, so an unwritten element fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "dispatch/gemm_table.h"
#include "common/gpu_test_util.h"

namespace fdpp {
namespace {

using test::DeviceTensor;

using Gemm = test::CudaBackendTest;

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return dtype_name(info.param);
}
INSTANTIATE_TEST_SUITE_P(Dtypes, Gemm, ::testing::Values(DType::kF16, DType::kBF16),
                         dtype_param_name);

// ---- host data and references ----------------------------------------------------

struct Inputs {
  int64_t max_m = 0, n = 0, k = 0;
  std::vector<float> x;     // (max_m, k)
  std::vector<float> w;     // (n, k)
  std::vector<float> bias;  // (n)
  std::vector<float> y0;    // (max_m, n): y before an accumulating call
};

// Small integers: w in [-2, 2]; each x row has at most 60 nonzeros in [-2, 2]
// (always at k = 0 and k = K - 1, so the first and the last partial chunk
// count); bias and y0 in [-8, 8]. |y| <= 60·4 + 8 + 8 = 256.
Inputs integer_inputs(int64_t max_m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-2, 2), tiny(-8, 8), pos(0, static_cast<int>(k) - 1);
  Inputs in{max_m, n, k, std::vector<float>(max_m * k, 0.f), std::vector<float>(n * k),
            std::vector<float>(n), std::vector<float>(max_m * n)};
  for (float& v : in.w) v = static_cast<float>(small(rng));
  for (int64_t m = 0; m < max_m; ++m) {
    float* row = in.x.data() + m * k;
    row[0] = static_cast<float>(1 + m % 2);
    row[k - 1] = -2.f;
    for (int i = 0; i < 58; ++i) row[pos(rng)] = static_cast<float>(small(rng));
  }
  for (float& v : in.bias) v = static_cast<float>(tiny(rng));
  for (float& v : in.y0) v = static_cast<float>(tiny(rng));
  return in;
}

Inputs random_inputs(int64_t max_m, int64_t n, int64_t k, uint32_t seed, DType dt) {
  Inputs in{max_m, n, k};
  in.x = test::random_normal(max_m * k, 1.f, seed, dt);
  in.w = test::random_uniform(n * k, -1.f, 1.f, seed + 1, dt);
  const float s = 1.f / std::sqrt(static_cast<float>(k));
  for (float& v : in.w) v = test::round_to(dt, v * s);
  in.bias = test::random_uniform(n, -1.f, 1.f, seed + 2, dt);
  in.y0 = test::random_normal(max_m * n, 1.f, seed + 3, dt);
  return in;
}

// x·wᵀ for all max_m rows: in double (the reference) and as a plain
// half-precision GEMM computes it (fp32 accumulation in k order).
struct Dots {
  std::vector<double> exact;  // (max_m, n)
  std::vector<float> plain;   // (max_m, n)
};
Dots dots(const Inputs& in) {
  Dots d{std::vector<double>(in.max_m * in.n), std::vector<float>(in.max_m * in.n)};
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < in.n; ++n) {
    const float* wn = in.w.data() + n * in.k;
    for (int64_t m = 0; m < in.max_m; ++m) {
      const float* xm = in.x.data() + m * in.k;
      double e = 0;
      float p = 0.f;
      for (int64_t k = 0; k < in.k; ++k) {
        e += static_cast<double>(xm[k]) * wn[k];
        p += xm[k] * wn[k];
      }
      d.exact[m * in.n + n] = e;
      d.plain[m * in.n + n] = p;
    }
  }
  return d;
}

struct Epilogue {
  bool accumulate = false;
  bool bias = false;
  std::string name() const {
    return std::string(accumulate ? "accumulate" : "store") + (bias ? "+bias" : "");
  }
};

// The first M rows of the reference and of the plain GEMM under an epilogue.
void expected(const Inputs& in, const Dots& d, int64_t M, const Epilogue& e, DType dt,
              std::vector<float>* ref, std::vector<float>* plain) {
  ref->resize(M * in.n);
  plain->resize(M * in.n);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < in.n; ++n) {
      const int64_t i = m * in.n + n;
      double r = d.exact[i];
      float p = d.plain[i];
      if (e.bias) r += in.bias[n], p += in.bias[n];
      if (e.accumulate) r += in.y0[i], p += in.y0[i];
      (*ref)[i] = static_cast<float>(r);
      (*plain)[i] = test::round_to(dt, p);
    }
}

::testing::AssertionResult exactly_equal(const std::vector<float>& out,
                                         const std::vector<float>& ref, int64_t n) {
  if (out.size() != ref.size())
    return ::testing::AssertionFailure() << "sizes " << out.size() << " / " << ref.size();
  if (out.empty()) return ::testing::AssertionFailure() << "nothing to compare";
  for (size_t i = 0; i < out.size(); ++i)
    if (!(out[i] == ref[i]))  // a NaN (unwritten) never compares equal
      return ::testing::AssertionFailure()
             << "y[" << i / n << ", " << i % n << "] = " << out[i] << ", expected " << ref[i];
  return ::testing::AssertionSuccess();
}

// ImplA (M <= 8), every ImplB configuration that holds M, ImplC; the kernels both
// with the planner's split-K and with a forced 3-way split (the fixup path).
std::vector<ImplChoice> implementations(int64_t m) {
  std::vector<ImplChoice> v;
  for (int splits : {0, 3}) {
    if (m <= GemvConfig::kMaxM) v.push_back({GemmImpl::kGemv, -1, splits});
    for (int c = 0; c < kFlatConfigCount; ++c)
      if (m <= kFlatConfigs[c].max_m()) v.push_back({GemmImpl::kFlat, c, splits});
  }
  v.push_back({GemmImpl::kCublas, -1, 0});
  return v;
}

cuda::GemmArgs args_of(const Tensor& x, const Tensor& w, const Tensor& y, const Tensor* bias,
                       bool accumulate) {
  cuda::GemmArgs a;
  a.x = x.data;
  a.w = w.data;
  a.y = y.data;
  a.bias = bias ? bias->data : nullptr;
  a.m = x.size(0);
  a.k = x.size(1);
  a.n = w.size(0);
  a.dtype = x.dtype;
  a.accumulate = accumulate;
  return a;
}

struct Case {
  int64_t n, k;
  std::vector<int64_t> ms;
};
const std::vector<int64_t> kAllM = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 33, 64};

// Runs every implementation on every M of `c` with inputs of one kind, every
// epilogue; returns how many outputs were compared.
int run_case(cuda::CudaBackend& be, const Case& c, const Inputs& in, bool exact,
             const std::vector<Epilogue>& epilogues, DType dt) {
  int compared = 0;
  const Dots d = dots(in);
  auto dx = test::upload(be, in.x, dt, {in.max_m, in.k});
  auto dw = test::upload(be, in.w, dt, {in.n, in.k});
  auto db = test::upload(be, in.bias, dt, {in.n});
  EXPECT_TRUE(dx.ok() && dw.ok() && db.ok());
  if (!dx.ok() || !dw.ok() || !db.ok()) return 0;
  for (int64_t M : c.ms) {
    const Tensor x = dx->t.rows(0, M);  // (M, K)
    for (const Epilogue& e : epilogues) {
      std::vector<float> ref, plain;
      expected(in, d, M, e, dt, &ref, &plain);
      const std::vector<float> y0(in.y0.begin(), in.y0.begin() + M * in.n);
      for (const ImplChoice& impl : implementations(M)) {
        SCOPED_TRACE(::testing::Message()
                     << (exact ? "integers" : "random") << " M " << M << " N " << in.n << " K "
                     << in.k << " " << impl_choice_name(impl) << " " << e.name());
        auto dy = e.accumulate ? test::upload(be, y0, dt, {M, in.n})
                               : test::alloc_poisoned(be, dt, {M, in.n});
        EXPECT_TRUE(dy.ok()) << dy.status().to_string();
        if (!dy.ok()) return compared;
        const Status st = be.gemm_dispatcher().run_choice(
            impl, args_of(x, dw->t, dy->t, e.bias ? &db->t : nullptr, e.accumulate),
            be.stream());
        if (!st.ok() && impl.impl == GemmImpl::kCublas && e.bias &&
            st.code() == StatusCode::kUnsupported) {
          continue;  // a build whose cuBLASLt path has no bias epilogue (CublasBias reports it)
        }
        EXPECT_TRUE(st.ok()) << st.to_string();
        if (!st.ok()) continue;
        auto out = test::download(be, dy->t);
        EXPECT_TRUE(out.ok());
        if (!out.ok()) continue;
        if (exact)
          EXPECT_TRUE(exactly_equal(*out, ref, in.n));
        else
          EXPECT_TRUE(test::close_by_flash_rule(*out, ref, plain, dt, "gemm"));
        ++compared;
      }
    }
  }
  return compared;
}

const std::vector<Epilogue> kAllEpilogues = {
    {false, false}, {false, true}, {true, false}, {true, true}};

// ---- the sweep -------------------------------------------------------------------

TEST_P(Gemm, AllImplementationsMatchTheReference) {
  const std::vector<Case> cases = {
      {4104, 4096, kAllM},   // N = 4096 + 8: a partial tile of every configuration
      {11008, 520, kAllM},   // the gate|up-like N with a short K (runtime)
      {5112, 520, kAllM},    // N and K off every tile
      {72, 4096, kAllM},     // N below one flat tile: split-K carries the parallelism
      {4096, 11008, {5}},    // the down projection's K, once
  };
  uint32_t seed = 9000;
  int compared = 0;
  for (const Case& c : cases) {
    const int64_t max_m = *std::max_element(c.ms.begin(), c.ms.end());
    compared += run_case(*gpu_, c, integer_inputs(max_m, c.n, c.k, ++seed), true, kAllEpilogues,
                         dt());
    compared += run_case(*gpu_, c, random_inputs(max_m, c.n, c.k, seed += 4, dt()), false,
                         {{false, false}, {true, true}}, dt());
  }
  EXPECT_GT(compared, 1000);
}

TEST_P(Gemm, CublasBias) {
  const int64_t M = 3, N = 72, K = 64;
  const Inputs in = integer_inputs(M, N, K, 17);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {M, K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {N, K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor db, test::upload(*gpu_, in.bias, dt(), {N}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {M, N}));
  const Status st = dispatcher().run_choice({GemmImpl::kCublas, -1, 0},
                                            args_of(dx.t, dw.t, dy.t, &db.t, false), gpu_->stream());
  if (st.code() == StatusCode::kUnsupported)
    GTEST_SKIP() << "this build's cuBLASLt path has no bias epilogue: " << st.to_string();
  FDPP_GPU_ASSERT_OK(st);
  std::vector<float> ref, plain;
  expected(in, dots(in), M, {false, true}, dt(), &ref, &plain);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
  EXPECT_TRUE(exactly_equal(out, ref, N));
}

// Every cuBLASLt heuristic answer the tuner may pick (ImplChoice::algo) is within the
// GEMM tolerance of the reference (answers differ in split-K and summation order, and a
// split-K answer may reduce its partials in the output type, so not bit for bit); an index
// the heuristic does not offer is Unsupported from run_choice, and a table naming one still
// runs, with the library's own pick.
TEST_P(Gemm, CublasHeuristicAnswersAgree) {
  const int64_t N = 4104, K = 1024;
  const Inputs in = random_inputs(64, N, K, 23, dt());
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {64, K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {N, K}));
  const Dots d = dots(in);
  int ran = 0;
  for (int64_t M : {1, 8, 64}) {
    std::vector<float> ref, plain;
    expected(in, d, M, {false, false}, dt(), &ref, &plain);
    const Tensor x = dx.t.rows(0, M);
    for (int algo = 0; algo <= kMaxCublasAlgo; ++algo) {
      SCOPED_TRACE(::testing::Message() << "M " << M << " algo " << algo);
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {M, N}));
      const Status st = dispatcher().run_choice({GemmImpl::kCublas, -1, 0, algo},
                                                args_of(x, dw.t, dy.t, nullptr, false),
                                                gpu_->stream());
      if (algo > 0 && st.code() == StatusCode::kUnsupported) continue;
      FDPP_GPU_ASSERT_OK(st);
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
      EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain, dt(), "cuBLASLt answer"));
      ++ran;
    }
  }
  EXPECT_GE(ran, 6);  // the first answer at every M, and more than one somewhere

  // A table whose entry names an answer past the last offered: linear() still runs.
  GemmTableShape shape{"t", N, K, {{8, ImplChoice{GemmImpl::kCublas, -1, 0, kMaxCublasAlgo}, 1.0}}};
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(
      TunedGemmTable table,
      TunedGemmTable::create(GpuIdentity{"test", 1, 9, 0, 13000}, dt(), {shape}));
  dispatcher().set_table(std::make_shared<TunedGemmTable>(std::move(table)));
  std::vector<float> ref, plain;
  expected(in, d, 8, {false, false}, dt(), &ref, &plain);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {8, N}));
  const Status st = gpu_->linear(dx.t.rows(0, 8), dw.t, dy.t, {});
  dispatcher().set_table(nullptr);
  FDPP_GPU_ASSERT_OK(st);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain, dt(), "table's cuBLASLt answer"));
}

// ---- routing ---------------------------------------------------------------------

// linear() under every policy gives the reference within tolerance, and the
// forced paths agree with auto.
TEST_P(Gemm, PoliciesAgree) {
  struct Shape3 {
    int64_t m, n, k;
  };
  uint32_t seed = 300;
  for (Shape3 s : {Shape3{1, 4096, 4096}, Shape3{3, 5112, 520}, Shape3{8, 4104, 1024},
                   Shape3{17, 72, 4096}, Shape3{64, 1032, 512}, Shape3{100, 264, 264}}) {
    SCOPED_TRACE(::testing::Message() << "M " << s.m << " N " << s.n << " K " << s.k);
    const Inputs in = random_inputs(s.m, s.n, s.k, ++seed, dt());
    std::vector<float> ref, plain;
    expected(in, dots(in), s.m, {true, false}, dt(), &ref, &plain);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {s.m, s.k}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {s.n, s.k}));
    std::vector<std::vector<float>> outs;
    for (GemmPolicy p :
         {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat, GemmPolicy::kCublas}) {
      dispatcher().set_policy(p);
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::upload(*gpu_, in.y0, dt(), {s.m, s.n}));
      FDPP_GPU_ASSERT_OK(gpu_->linear(dx.t, dw.t, dy.t, {.accumulate = true}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
      EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain, dt(), gemm_policy_name(p)));
      outs.push_back(std::move(out));
    }
    dispatcher().set_policy(GemmPolicy::kAuto);
    // Each forced path within the tolerance of auto: both round the same fp32 sum
    // (up to summation order), so they differ by at most an ulp of the output.
    for (size_t i = 1; i < outs.size(); ++i)
      for (size_t j = 0; j < outs[0].size(); ++j)
        ASSERT_LE(std::fabs(outs[i][j] - outs[0][j]),
                  2.0 * test::dtype_epsilon(dt()) * std::max(1.f, std::fabs(ref[j])))
            << "policy " << i << " element " << j;
  }
}

// K % 8 != 0 and views that do not start on 16 bytes: the custom kernels cannot
// load them with 16-byte loads, so every policy lands on cuBLASLt, correctly.
TEST_P(Gemm, UnsupportedShapesRouteToCublas) {
  struct Shape3 {
    int64_t m, n, k;
  };
  uint32_t seed = 700;
  for (Shape3 s : {Shape3{1, 72, 4100}, Shape3{5, 1000, 1030}, Shape3{17, 264, 13}}) {
    SCOPED_TRACE(::testing::Message() << "M " << s.m << " N " << s.n << " K " << s.k);
    const Inputs in = integer_inputs(s.m, s.n, s.k, ++seed);
    std::vector<float> ref, plain;
    expected(in, dots(in), s.m, {false, false}, dt(), &ref, &plain);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {s.m, s.k}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {s.n, s.k}));
    for (GemmPolicy p : {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat}) {
      dispatcher().set_policy(p);
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {s.m, s.n}));
      const GemmPlan plan = dispatcher().plan(args_of(dx.t, dw.t, dy.t, nullptr, false));
      EXPECT_EQ(plan.choice.impl, GemmImpl::kCublas) << gemm_policy_name(p);
      FDPP_GPU_ASSERT_OK(gpu_->linear(dx.t, dw.t, dy.t, {}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
      EXPECT_TRUE(exactly_equal(out, ref, s.n)) << gemm_policy_name(p);
    }
    dispatcher().set_policy(GemmPolicy::kAuto);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {s.m, s.n}));
    const Status st = dispatcher().run_choice({GemmImpl::kGemv, -1, 0},
                                              args_of(dx.t, dw.t, dy.t, nullptr, false),
                                              gpu_->stream());
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  }

  // Misaligned views: x and w one element past a 16-byte boundary.
  const int64_t M = 3, N = 200, K = 512;
  const Inputs in = integer_inputs(M, N, K, 5);
  std::vector<float> ref, plain;
  expected(in, dots(in), M, {false, false}, dt(), &ref, &plain);
  std::vector<float> xp(1 + M * K, 0.f), wp(1 + N * K, 0.f);
  std::copy(in.x.begin(), in.x.end(), xp.begin() + 1);
  std::copy(in.w.begin(), in.w.end(), wp.begin() + 1);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dxp, test::upload(*gpu_, xp, dt(), {1 + M * K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dwp, test::upload(*gpu_, wp, dt(), {1 + N * K}));
  const size_t e = dtype_size(dt());
  const Tensor x(static_cast<char*>(dxp.t.data) + e, dt(), Device::kCUDA, {M, K});
  const Tensor w(static_cast<char*>(dwp.t.data) + e, dt(), Device::kCUDA, {N, K});
  for (GemmPolicy p : {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat}) {
    dispatcher().set_policy(p);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {M, N}));
    EXPECT_EQ(dispatcher().plan(args_of(x, w, dy.t, nullptr, false)).choice.impl,
              GemmImpl::kCublas);
    FDPP_GPU_ASSERT_OK(gpu_->linear(x, w, dy.t, {}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
    EXPECT_TRUE(exactly_equal(out, ref, N)) << "misaligned, " << gemm_policy_name(p);
  }
  dispatcher().set_policy(GemmPolicy::kAuto);
}

// ---- split-K: determinism and graphs -------------------------------------------------

// A split-K GEMM captured in a graph and replayed with new x each time: the
// arrival counters must be back at 0 after every launch, and the sum order fixed.
TEST_P(Gemm, SplitKInGraphsIsExactAndDeterministic) {
  const int64_t N = 72, K = 4096;
  struct Run {
    ImplChoice impl;
    int64_t m;
  };
  for (const Run& run : {Run{{GemmImpl::kGemv, -1, 4}, 2}, Run{{GemmImpl::kFlat, 0, 5}, 1},
                         Run{{GemmImpl::kFlat, 4, 3}, 9}}) {
    const ImplChoice impl = run.impl;
    const int64_t m = run.m;
    SCOPED_TRACE(impl_choice_name(impl));
    const Inputs in = integer_inputs(m, N, K, 41);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {m, K}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {N, K}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor db, test::upload(*gpu_, in.bias, dt(), {N}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {m, N}));
    const cuda::GemmArgs a = args_of(dx.t, dw.t, dy.t, &db.t, false);
    const GemmPlan plan = resolve_gemm_choice(impl, cuda::GemmDispatcher::problem(a),
                                              dispatcher().traits());
    ASSERT_EQ(plan.fallback, nullptr);
    ASSERT_GT(plan.choice.splits, 1);
    FDPP_GPU_ASSERT_OK(dispatcher().execute(plan, a, gpu_->stream()));  // eager first
    FDPP_GPU_ASSERT_OK(gpu_->begin_capture());
    const Status st = dispatcher().execute(plan, a, gpu_->stream());
    auto graph = gpu_->end_capture();
    FDPP_GPU_ASSERT_OK(st);
    FDPP_GPU_ASSERT_OK(graph);
    for (int replay = 0; replay < 3; ++replay) {
      // New x each replay: the graph reads the buffer, not the values it was captured with.
      Inputs r = integer_inputs(m, N, K, 100 + replay);
      r.w = in.w;
      r.bias = in.bias;
      std::vector<float> ref, plain;
      expected(r, dots(r), m, {false, true}, dt(), &ref, &plain);
      const std::vector<uint8_t> bytes = test::encode(r.x, dt());
      FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(bytes.data(), dx.t));
      FDPP_GPU_ASSERT_OK(gpu_->fill_bytes(dy.t, 0xFF));
      FDPP_GPU_ASSERT_OK((*graph)->replay());
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
      EXPECT_TRUE(exactly_equal(out, ref, N)) << "replay " << replay;
    }
  }

  // Random inputs: the same split-K call twice gives the same bits.
  const int64_t M = 8;
  const Inputs in = random_inputs(M, 4096, 4096, 99, dt());
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dx, test::upload(*gpu_, in.x, dt(), {M, 4096}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dw, test::upload(*gpu_, in.w, dt(), {4096, 4096}));
  for (ImplChoice impl : {ImplChoice{GemmImpl::kGemv, -1, 8}, ImplChoice{GemmImpl::kFlat, 0, 8}}) {
    std::vector<std::vector<float>> outs;
    for (int run = 0; run < 2; ++run) {
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor dy, test::alloc_poisoned(*gpu_, dt(), {M, 4096}));
      FDPP_GPU_ASSERT_OK(dispatcher().run_choice(impl, args_of(dx.t, dw.t, dy.t, nullptr, false),
                                                 gpu_->stream()));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, dy.t));
      outs.push_back(std::move(out));
    }
    EXPECT_TRUE(exactly_equal(outs[1], outs[0], 4096)) << impl_choice_name(impl);
  }
}

}  // namespace
}  // namespace fdpp
