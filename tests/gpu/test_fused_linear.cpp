// Backend::fused_linear on CUDA: when the dispatcher picks the GEMV, the kernel applies
// RMSNorm or the SiLU gate while it stages x (gemm/gemv_kernel.cuh); any other plan runs
// the op into the scratch tensor first. Either way the result must be what the separate
// ops give, run on the same GPU under the same GEMM plan:
//  - the SiLU gate bit for bit (the same element formula feeds the same GEMV);
//  - RMSNorm within a rounding of the normalised x: the fused GEMV rounds x · weight and
//    applies the row's 1/rms to the dot product, the separate op rounds x · (1/rms) and
//    then its product with the weight.
// Shapes cover K split across CTAs (the norm needs the whole row in every split), M = 1..8
// (GEMV) and M above it (unfused), accumulate + bias, and forced split-K.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "gpu/gpu_test_util.h"

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
                                      {17, 130, 264}};
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
        fused_calls += gemv;
      }
    }
  }
  EXPECT_GE(fused_calls, 10);  // the fused kernel ran (at least under --gemm gemv, M <= 8)
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


// ---- the RoPE epilogue ------------------------------------------------------------
// fused_linear with ep.rope: under the GEMV the kernel rotates q and k and appends k, v to
// the cache as it stores (gemv_kernel.cuh: rope_append_tile), with each CTA owning whole
// pairs. It must write what the GEMV's y followed by rope_and_append_kv writes: q_out and
// the cache layer, untouched cache positions included, within one rounding of the rotation
// (the same formula in two kernels; nvcc may contract it into FMAs differently).

struct RopeCase {
  int n_heads, n_kv, head_dim, rotary_dim;
  bool interleaved;
  const char* what;
};

// Element-wise: equal (NaN, the poison of untouched cache rows, equals NaN) or within one
// unit of the dtype's rounding of the reference.
::testing::AssertionResult same_within_rounding(const std::vector<float>& got,
                                                const std::vector<float>& ref, DType dt,
                                                const char* what) {
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(ref[i])) continue;
    const double tol = test::dtype_epsilon(dt) * std::max(1e-3, std::fabs(double(ref[i])));
    if (!(std::fabs(double(got[i]) - ref[i]) <= tol))
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i]
                                           << ", separately " << ref[i];
  }
  return ::testing::AssertionSuccess();
}

TEST_P(FusedLinear, RopeEpilogueWritesWhatTheSeparateOpWrites) {
  const std::vector<RopeCase> cases = {
      {4, 2, 128, 128, false, "llama GQA"},
      {3, 3, 64, 64, false, "MHA d64"},
      {8, 4, 8, 8, false, "d8: one CTA spans heads"},
      {4, 2, 128, 64, true, "chatglm: interleaved, half rotary"},
      {2, 1, 16, 8, false, "partial rotate-half"},
      {3, 1, 32, 0, false, "no rotary: append only"},
  };
  uint32_t seed = 1300;
  int fused_calls = 0, split_calls = 0;
  for (const RopeCase& c : cases) {
    for (int64_t m : {1, 2, 5}) {
      for (int64_t k : {264, 4104}) {
        for (bool norm : {true, false}) {
          SCOPED_TRACE(::testing::Message() << c.what << " M " << m << " K " << k
                                            << (norm ? " rmsnorm" : " no prologue"));
          const int64_t n = int64_t{c.n_heads + 2 * c.n_kv} * c.head_dim;
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(
              Problem p, make_problem(*gpu_, Kind::kRmsNorm, m, n, k, seed += 10, dt()));
          KVCacheLayout layout;
          layout.n_layers = 2;
          layout.n_slots = 6;
          layout.n_kv_heads = c.n_kv;
          layout.capacity = 4100;  // positions up to 4099: large angles
          layout.head_dim = c.head_dim;
          std::vector<int32_t> pos(m), slots(m);
          for (int64_t t = 0; t < m; ++t) {
            slots[t] = static_cast<int32_t>((t * 5 + 1) % layout.n_slots);
            pos[t] = static_cast<int32_t>((t * 1361 + 4099) % layout.capacity);
          }
          std::vector<float> inv_freq(std::max(1, c.rotary_dim / 2));
          for (size_t i = 0; i < inv_freq.size(); ++i)
            inv_freq[i] = 1.f / std::pow(10000.f, 2.f * i / std::max(1, c.rotary_dim));
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_pos, test::upload_i32(*gpu_, pos, {m}));
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_slots, test::upload_i32(*gpu_, slots, {m}));
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(
              DeviceTensor d_freq,
              test::upload(*gpu_, inv_freq, DType::kF32, {static_cast<int64_t>(inv_freq.size())}));

          // Both runs: a poisoned cache and q, then fused_linear with or without the epilogue.
          const int layer = 1;
          struct Outputs {
            std::vector<float> q, k, v;
          };
          auto run = [&](bool fused) -> Result<Outputs> {
            FDPP_ASSIGN_OR_RETURN(KVCache cache, gpu_->alloc_kv_cache(layout));
            FDPP_RETURN_IF_ERROR(gpu_->fill_bytes(cache.k_layer(layer), 0xFF));
            FDPP_RETURN_IF_ERROR(gpu_->fill_bytes(cache.v_layer(layer), 0xFF));
            FDPP_ASSIGN_OR_RETURN(DeviceTensor q,
                                  test::alloc_poisoned(*gpu_, dt(), {m, c.n_heads, c.head_dim}));
            FDPP_ASSIGN_OR_RETURN(DeviceTensor y, test::alloc_poisoned(*gpu_, dt(), {m, n}));
            RopeAppendArgs a;
            a.qkv = y.t;
            a.positions = d_pos.t;
            a.slots = d_slots.t;
            a.inv_freq = c.rotary_dim > 0 ? d_freq.t : Tensor();
            a.rotary_dim = c.rotary_dim;
            a.interleaved = c.interleaved;
            a.cache = &cache;
            a.layer = layer;
            a.q_out = q.t;
            const LinearPrologue pro = norm ? prologue_of(p) : LinearPrologue{};
            if (fused) {
              FDPP_RETURN_IF_ERROR(
                  gpu_->fused_linear(p.x.t, pro, p.w.t, y.t, {.bias = p.bias.t, .rope = &a}));
            } else {
              FDPP_RETURN_IF_ERROR(gpu_->fused_linear(p.x.t, pro, p.w.t, y.t, {.bias = p.bias.t}));
              FDPP_RETURN_IF_ERROR(gpu_->rope_and_append_kv(a));
            }
            Outputs o;
            FDPP_ASSIGN_OR_RETURN(o.q, test::download(*gpu_, q.t));
            FDPP_ASSIGN_OR_RETURN(o.k, test::download(*gpu_, cache.k_layer(layer)));
            FDPP_ASSIGN_OR_RETURN(o.v, test::download(*gpu_, cache.v_layer(layer)));
            return o;
          };
          dispatcher().set_policy(GemmPolicy::kGemv);
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(Outputs fused, run(true));
          FDPP_GPU_ASSERT_OK_AND_ASSIGN(Outputs separate, run(false));
          EXPECT_TRUE(test::all_finite(fused.q, "q"));
          EXPECT_TRUE(same_within_rounding(fused.q, separate.q, dt(), "q"));
          EXPECT_TRUE(same_within_rounding(fused.k, separate.k, dt(), "k cache"));
          EXPECT_TRUE(same_within_rounding(fused.v, separate.v, dt(), "v cache"));

          cuda::GemmArgs a;
          a.x = p.x.t.data;
          a.w = p.w.t.data;
          a.y = p.y0.t.data;
          a.m = m;
          a.n = n;
          a.k = k;
          a.dtype = dt();
          const ImplChoice choice = dispatcher().plan(a).choice;
          fused_calls += choice.impl == GemmImpl::kGemv;
          split_calls += choice.impl == GemmImpl::kGemv && choice.splits > 1;
        }
      }
    }
  }
  dispatcher().set_policy(GemmPolicy::kAuto);
  EXPECT_EQ(fused_calls, 6 * 3 * 2 * 2);  // every call ran the GEMV with the epilogue
  EXPECT_GE(split_calls, 4);               // and some of them split K
}

// The epilogue is refused where it makes no sense, on every path: linear() itself, y that
// is not the epilogue's qkv, and an accumulating y.
TEST_P(FusedLinear, RopeEpilogueBadArguments) {
  const int64_t m = 1, n = (2 + 2 * 1) * 16, k = 64;
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(Problem p, make_problem(*gpu_, Kind::kRmsNorm, m, n, k, 77, dt()));
  KVCacheLayout layout{1, 1, 1, 8, 16};
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(KVCache cache, gpu_->alloc_kv_cache(layout));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_pos, test::upload_i32(*gpu_, {3}, {1}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_slots, test::upload_i32(*gpu_, {0}, {1}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_freq,
                                test::upload(*gpu_, std::vector<float>(8, 0.5f), DType::kF32, {8}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor q, test::alloc_poisoned(*gpu_, dt(), {m, 2, 16}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y, test::alloc_poisoned(*gpu_, dt(), {m, n}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor other, test::alloc_poisoned(*gpu_, dt(), {m, n}));
  RopeAppendArgs a;
  a.qkv = y.t;
  a.positions = d_pos.t;
  a.slots = d_slots.t;
  a.inv_freq = d_freq.t;
  a.rotary_dim = 16;
  a.cache = &cache;
  a.q_out = q.t;
  for (GemmPolicy policy : {GemmPolicy::kGemv, GemmPolicy::kCublas}) {
    SCOPED_TRACE(gemm_policy_name(policy));
    dispatcher().set_policy(policy);
    EXPECT_EQ(gpu_->linear(p.x.t, p.w.t, y.t, {.rope = &a}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(gpu_->fused_linear(p.x.t, prologue_of(p), p.w.t, other.t, {.rope = &a}).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(
        gpu_->fused_linear(p.x.t, prologue_of(p), p.w.t, y.t, {.accumulate = true, .rope = &a})
            .code(),
        StatusCode::kInvalidArgument);
    EXPECT_TRUE(gpu_->fused_linear(p.x.t, prologue_of(p), p.w.t, y.t, {.rope = &a}).ok());
  }
}

}  // namespace
}  // namespace fdpp
