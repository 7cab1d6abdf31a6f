// silu_mul, relu and gelu: the harness's table cases (CUDA vs the CPU reference, the old
// sweeps' shapes and seeds, f16 and bf16). silu_mul's tolerance is flash-attention's rule
// against a plain implementation that rounds where Hugging Face's eager half-precision code
// rounds; relu of a dtype value is exact; gelu's plain implementation is the fp32 formula
// rounded once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

using test::DeviceTensor;

void check_silu_mul(test::OpEnv& env, int64_t F, int64_t M, uint32_t seed) {
  FDPP_OP_ENV(env);
  SCOPED_TRACE(::testing::Message() << "F " << F << " M " << M);
  // Wide inputs reach silu's tails (e^-g overflows for g < -88 in fp32).
  std::vector<float> gu = test::random_normal(M * 2 * F, 4.f, ++seed, dt());
  gu[0] = r(-100.f);
  gu[F] = r(3.f);
  std::vector<float> ref(M * F);
  FDPP_GPU_ASSERT_OK(
      cpu_->silu_mul(test::host_view(gu, {M, 2 * F}), test::host_view(ref, {M, F})));
  std::vector<float> plain(M * F);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t f = 0; f < F; ++f) {
      const float g = gu[m * 2 * F + f], u = gu[m * 2 * F + F + f];
      plain[m * F + f] = r(r(g / (1.f + std::exp(-g))) * u);
    }
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_gu, test::upload(*gpu_, gu, dt(), {M, 2 * F}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {M, F}));
  FDPP_GPU_ASSERT_OK(gpu_->silu_mul(d_gu.t, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain, dt(), "silu_mul"));
}

// One N of the old ReluAndGelu loop: its input (one seed) and one activation.
void check_activation(test::OpEnv& env, int64_t N, Activation act, uint32_t seed) {
  FDPP_OP_ENV(env);
  const int64_t M = 3;
  std::vector<float> x = test::random_normal(M * N, 3.f, ++seed, dt());
  SCOPED_TRACE(::testing::Message() << activation_name(act) << " N " << N);
  std::vector<float> ref(M * N);
  FDPP_GPU_ASSERT_OK(
      cpu_->activation(test::host_view(x, {M, N}), test::host_view(ref, {M, N}), act));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {M, N}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {M, N}));
  FDPP_GPU_ASSERT_OK(gpu_->activation(d_x.t, d_out.t, act));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  if (act == Activation::kRelu) {
    EXPECT_EQ(out, ref) << "relu of a dtype value is exact";
  } else {
    // The plain implementation is the fp32 formula rounded once: the reference rounded.
    EXPECT_TRUE(test::close_by_flash_rule(out, ref, test::round_all(dt(), ref), dt(), "gelu"));
  }
  FDPP_GPU_ASSERT_OK(gpu_->activation(d_x.t, d_x.t, act));  // in place
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto in_place, test::download(*gpu_, d_x.t));
  EXPECT_EQ(in_place, out);
}

// Reads the input (gate and up for silu_mul), writes the output.
Result<test::PerfLaunch> perf_activation(test::OpEnv& env, int64_t M, int64_t F,
                                         bool silu_mul, Activation act) {
  const DType dt = env.dtype;
  cuda::CudaBackend& be = *env.gpu;
  const int64_t in_cols = silu_mul ? 2 * F : F;
  test::PerfLaunch p;
  const std::vector<float> in = test::random_normal(M * in_cols, 1.f, 1, dt);
  FDPP_ASSIGN_OR_RETURN(DeviceTensor x, test::upload(be, in, dt, {M, in_cols}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor out, test::alloc_poisoned(be, dt, {M, F}));
  const Tensor tx = x.t, to = out.t;
  if (silu_mul)
    p.launch = [&be, tx, to] { return be.silu_mul(tx, to); };
  else
    p.launch = [&be, tx, to, act] { return be.activation(tx, to, act); };
  p.bytes = static_cast<double>((M * in_cols + M * F) * dtype_size(dt));
  p.hold(std::move(x), std::move(out));
  return p;
}

void add_activation_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 300;  // the old sweep's seeds: one per case, in loop order
    for (int64_t F : {8, 13, 172, 11008})
      for (int64_t M : {1, 3, 8}) {
        cases.push_back({"silu_mul", test::shape_name({{"F", F}, {"M", M}}), dtype,
                         [=](test::OpEnv& e) { check_silu_mul(e, F, M, seed); },
                         [=](test::OpEnv& e) { return perf_activation(e, M, F, true, {}); }});
        seed += 1;
      }
    seed = 900;  // one per N, shared by its relu and gelu cases (the same input)
    for (int64_t N : {7, 64, 16384}) {
      for (Activation act : {Activation::kRelu, Activation::kGelu})
        cases.push_back({activation_name(act), test::shape_name({{"N", N}, {"M", 3}}), dtype,
                         [=](test::OpEnv& e) { check_activation(e, N, act, seed); },
                         [=](test::OpEnv& e) { return perf_activation(e, 3, N, false, act); }});
      seed += 1;
    }
  }
}
FDPP_REGISTER_OP_CASES(add_activation_cases);

}  // namespace
}  // namespace fdpp
