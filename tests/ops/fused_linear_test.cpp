// Backend::fused_linear on CUDA: when the dispatcher picks the GEMV and M is at most
// kMaxFusedPrologueM, the kernel applies RMSNorm or the SiLU gate while it stages x
// (gemm/gemv_kernel.cuh); any other call runs the op into the scratch tensor first (the
// kernel's prologue at larger M is exercised through the dispatcher: ForcedSplitK). Either
// way the result must be what the separate ops give, run on the same GPU under the same
// GEMM plan:
//  - the SiLU gate bit for bit (the same element formula feeds the same GEMV);
//  - RMSNorm within a rounding of the normalised x: the fused GEMV rounds x · weight and
//    applies the row's 1/rms to the dot product, the separate op rounds x · (1/rms) and
//    then its product with the weight.
// Shapes cover K split across CTAs (the norm needs the whole row in every split), M = 1..8
// (GEMV) and M above it (unfused), accumulate + bias, and forced split-K.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "common/gpu_test_util.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using Kind = LinearPrologue::Kind;

using FusedLinear = test::CudaBackendTest;
INSTANTIATE_TEST_SUITE_P(Dtypes, FusedLinear, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

constexpr float kEps = 1e-5f;

// One problem's device tensors: x is (M, K) for RMSNorm, (M, 2K) gate|up for the gate.
struct Problem {
  Kind kind;
  int64_t m, n, k;
  DeviceTensor x, w, bias, norm_weight, scratch, y0;
};

Result<Problem> make_problem(cuda::CudaBackend& be, Kind kind, int64_t m, int64_t n, int64_t k,
                             uint32_t seed, DType dt) {
  const int64_t width = kind == Kind::kSiluMul ? 2 * k : k;
  Problem p{kind, m, n, k};
  // x with a scale far from 1, so that a norm that used the wrong row sum shows.
  FDPP_ASSIGN_OR_RETURN(p.x, test::upload(be, test::random_normal(m * width, 3.f, seed, dt), dt,
                                          {m, width}));
  std::vector<float> w = test::random_uniform(n * k, -1.f, 1.f, seed + 1, dt);
  for (float& v : w) v = test::round_to(dt, v / std::sqrt(static_cast<float>(k)));
  FDPP_ASSIGN_OR_RETURN(p.w, test::upload(be, w, dt, {n, k}));
  FDPP_ASSIGN_OR_RETURN(p.bias,
                        test::upload(be, test::random_uniform(n, -1.f, 1.f, seed + 2, dt), dt, {n}));
  FDPP_ASSIGN_OR_RETURN(p.norm_weight, test::upload(be, test::random_uniform(k, 0.5f, 1.5f,
                                                                             seed + 3, dt),
                                                    dt, {k}));
  FDPP_ASSIGN_OR_RETURN(p.scratch, test::alloc_poisoned(be, dt, {m, k}));
  FDPP_ASSIGN_OR_RETURN(p.y0, test::upload(be, test::random_normal(m * n, 1.f, seed + 4, dt), dt,
                                           {m, n}));
  return p;
}

LinearPrologue prologue_of(const Problem& p) {
  return p.kind == Kind::kRmsNorm
             ? LinearPrologue::rms_norm(p.norm_weight.t, kEps, p.scratch.t)
             : LinearPrologue::silu_mul(p.scratch.t);
}

// The separate op into a fresh buffer: f(x), (M, K).
Result<DeviceTensor> apply_op(cuda::CudaBackend& be, const Problem& p, DType dt) {
  FDPP_ASSIGN_OR_RETURN(DeviceTensor h, test::alloc_poisoned(be, dt, {p.m, p.k}));
  if (p.kind == Kind::kRmsNorm)
    FDPP_RETURN_IF_ERROR(be.rmsnorm(p.x.t, p.norm_weight.t, kEps, h.t));
  else
    FDPP_RETURN_IF_ERROR(be.silu_mul(p.x.t, h.t));
  return h;
}

// y0 copied into a fresh output (the calls accumulate into it).
Result<DeviceTensor> fresh_y(cuda::CudaBackend& be, const Problem& p, DType dt) {
  FDPP_ASSIGN_OR_RETURN(DeviceTensor y, test::alloc_poisoned(be, dt, {p.m, p.n}));
  FDPP_RETURN_IF_ERROR(be.copy(p.y0.t, y.t));
  return y;
}

::testing::AssertionResult agrees(const std::vector<float>& fused,
                                  const std::vector<float>& separate, Kind kind, int64_t n,
                                  DType dt) {
  if (fused.size() != separate.size() || fused.empty())
    return ::testing::AssertionFailure() << "sizes " << fused.size() << " / " << separate.size();
  if (kind == Kind::kSiluMul) {
    for (size_t i = 0; i < fused.size(); ++i)
      if (!(fused[i] == separate[i]))
        return ::testing::AssertionFailure() << "y[" << i / n << ", " << i % n << "] = "
                                             << fused[i] << ", separately " << separate[i];
    return ::testing::AssertionSuccess();
  }
  const double worst = test::worst_row_rel_l2(fused, separate, static_cast<int>(n));
  if (!(worst <= 2.0 * test::dtype_epsilon(dt)))
    return ::testing::AssertionFailure() << "worst row rel L2 " << worst;
  return ::testing::AssertionSuccess();
}

struct Shape3 {
  int64_t m, n, k;
};

// Every policy: auto and gemv fuse where the plan is the GEMV, flat and cublas never do.
TEST_P(FusedLinear, MatchesTheSeparateOps) {
  const std::vector<Shape3> shapes = {{1, 4096, 4096}, {3, 300, 1032}, {8, 72, 4104},
                                      {5, 1000, 520},  {2, 37, 8},     {9, 264, 512},
                                      {17, 130, 264},  {1, 300, 1032}, {1, 37, 8}};
  uint32_t seed = 500;
  int fused_calls = 0;
  for (Kind kind : {Kind::kRmsNorm, Kind::kSiluMul}) {
    for (const Shape3& s : shapes) {
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(Problem p,
                                    make_problem(*gpu_, kind, s.m, s.n, s.k, seed += 10, dt()));
      for (GemmPolicy policy :
           {GemmPolicy::kAuto, GemmPolicy::kGemv, GemmPolicy::kFlat, GemmPolicy::kCublas}) {
        SCOPED_TRACE(::testing::Message()
                     << (kind == Kind::kRmsNorm ? "rmsnorm" : "silu_mul") << " M " << s.m
                     << " N " << s.n << " K " << s.k << " " << gemm_policy_name(policy));
        dispatcher().set_policy(policy);
        const LinearEpilogue ep{.accumulate = true, .bias = p.bias.t};
        FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y, fresh_y(*gpu_, p, dt()));
        FDPP_GPU_ASSERT_OK(gpu_->fused_linear(p.x.t, prologue_of(p), p.w.t, y.t, ep));
        FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor h, apply_op(*gpu_, p, dt()));
        FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y_sep, fresh_y(*gpu_, p, dt()));
        FDPP_GPU_ASSERT_OK(gpu_->linear(h.t, p.w.t, y_sep.t, ep));
        FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto fused, test::download(*gpu_, y.t));
        FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto separate, test::download(*gpu_, y_sep.t));
        EXPECT_TRUE(test::all_finite(fused, "fused"));
        EXPECT_TRUE(agrees(fused, separate, kind, s.n, dt()));

        cuda::GemmArgs a;
        a.x = h.t.data;
        a.w = p.w.t.data;
        a.y = y.t.data;
        a.m = s.m;
        a.n = s.n;
        a.k = s.k;
        a.dtype = dt();
        const bool gemv = dispatcher().plan(a).choice.impl == GemmImpl::kGemv;
        if (policy == GemmPolicy::kGemv) {
          EXPECT_EQ(gemv, s.m <= GemvConfig::kMaxM);
        } else if (policy != GemmPolicy::kAuto) {
          EXPECT_FALSE(gemv);
        }
        fused_calls += gemv && s.m <= cuda::kMaxFusedPrologueM;
      }
    }
  }
  EXPECT_GE(fused_calls, 6);  // the fused kernel ran (at least under --gemm gemv, M = 1)
}

// A forced 3-way split: every split's CTAs normalise with the whole row, and the split-K
// fixup finishes the prologue's GEMV like any other.
TEST_P(FusedLinear, ForcedSplitK) {
  uint32_t seed = 900;
  for (Kind kind : {Kind::kRmsNorm, Kind::kSiluMul}) {
    for (int64_t m : {1, 4, 8}) {
      SCOPED_TRACE(::testing::Message() << (kind == Kind::kRmsNorm ? "rmsnorm" : "silu_mul")
                                        << " M " << m);
      const int64_t n = 72, k = 3000;
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(Problem p, make_problem(*gpu_, kind, m, n, k, ++seed, dt()));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor h, apply_op(*gpu_, p, dt()));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y, fresh_y(*gpu_, p, dt()));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y_sep, fresh_y(*gpu_, p, dt()));
      cuda::GemmArgs a;
      a.w = p.w.t.data;
      a.bias = p.bias.t.data;
      a.m = m;
      a.n = n;
      a.k = k;
      a.dtype = dt();
      a.accumulate = true;
      const ImplChoice split3{GemmImpl::kGemv, -1, 3};
      a.x = h.t.data;
      a.y = y_sep.t.data;
      FDPP_GPU_ASSERT_OK(dispatcher().run_choice(split3, a, gpu_->stream()));
      a.x = p.x.t.data;
      a.y = y.t.data;
      a.prologue = kind == Kind::kRmsNorm ? cuda::GemvPrologue::kRmsNorm
                                          : cuda::GemvPrologue::kSiluMul;
      a.norm_weight = p.norm_weight.t.data;
      a.norm_eps = kEps;
      FDPP_GPU_ASSERT_OK(dispatcher().run_choice(split3, a, gpu_->stream()));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto fused, test::download(*gpu_, y.t));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto separate, test::download(*gpu_, y_sep.t));
      EXPECT_TRUE(agrees(fused, separate, kind, n, dt()));
    }
  }
}

// The same calls are refused under every policy, whichever path the shape would take.
TEST_P(FusedLinear, BadArgumentsAreRefusedOnEveryPath) {
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(Problem p, make_problem(*gpu_, Kind::kRmsNorm, 2, 64, 256, 7, dt()));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor wide_scratch, test::alloc_poisoned(*gpu_, dt(), {2, 264}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y, fresh_y(*gpu_, p, dt()));
  for (GemmPolicy policy : {GemmPolicy::kGemv, GemmPolicy::kCublas}) {
    SCOPED_TRACE(gemm_policy_name(policy));
    dispatcher().set_policy(policy);
    // Scratch of the wrong width.
    EXPECT_EQ(gpu_->fused_linear(p.x.t, LinearPrologue::rms_norm(p.norm_weight.t, kEps,
                                                                  wide_scratch.t),
                                 p.w.t, y.t, {})
                  .code(),
              StatusCode::kInvalidArgument);
    // A norm weight of the wrong length (the bias, 64 long, for K = 256).
    EXPECT_EQ(gpu_->fused_linear(p.x.t, LinearPrologue::rms_norm(p.bias.t, kEps, p.scratch.t),
                                 p.w.t, y.t, {})
                  .code(),
              StatusCode::kInvalidArgument);
    // A negative eps.
    EXPECT_EQ(gpu_->fused_linear(p.x.t, LinearPrologue::rms_norm(p.norm_weight.t, -1.f,
                                                                  p.scratch.t),
                                 p.w.t, y.t, {})
                  .code(),
              StatusCode::kInvalidArgument);
    // The gate needs x of width 2K; this one is K wide.
    EXPECT_EQ(gpu_->fused_linear(p.x.t, LinearPrologue::silu_mul(p.scratch.t), p.w.t, y.t, {})
                  .code(),
              StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace fdpp
