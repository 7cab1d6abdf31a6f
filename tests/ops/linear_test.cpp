// linear (cuBLASLt / fdpp's GEMMs behind the dispatcher), with and without accumulate,
// with a bias (the epilogue when the bias is aligned, the separate bias kernel when it is
// not): the harness's table cases against the CPU reference, the old sweeps' shapes and
// seeds, and the wrong-bias TEST. Tolerance: flash-attention's rule against plain_linear
// (F.linear in half precision), one more ulp of the output where the bias kernel rounds a
// second time. GEMM implementations, policies and split-K: gemm_test.cpp.
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

struct NK {
  int64_t N, K;
};

void check_linear(test::OpEnv& env, NK s, int64_t M, bool accumulate, uint32_t seed) {
  FDPP_OP_ENV(env);
  SCOPED_TRACE(::testing::Message() << "M " << M << " N " << s.N << " K " << s.K
                                    << (accumulate ? " accumulate" : ""));
  std::vector<float> x = test::random_normal(M * s.K, 1.f, ++seed, dt());
  std::vector<float> w =
      test::random_normal(s.N * s.K, 1.f / std::sqrt(static_cast<float>(s.K)), ++seed, dt());
  std::vector<float> y0 = test::random_normal(M * s.N, 1.f, ++seed, dt());
  std::vector<float> ref = y0;
  FDPP_GPU_ASSERT_OK(cpu_->linear(test::host_view(x, {M, s.K}),
                                  test::host_view(w, {s.N, s.K}),
                                  test::host_view(ref, {M, s.N}), {.accumulate = accumulate}));
  const auto plain = test::plain_linear(x, w, {}, y0, M, s.N, s.K, accumulate, dt());
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {M, s.K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {s.N, s.K}));
  // Without accumulate y's old contents must not be read: poison them.
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_y,
                                accumulate ? test::upload(*gpu_, y0, dt(), {M, s.N})
                                           : test::alloc_poisoned(*gpu_, dt(), {M, s.N}));
  FDPP_GPU_ASSERT_OK(gpu_->linear(d_x.t, d_w.t, d_y.t, {.accumulate = accumulate}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto y, test::download(*gpu_, d_y.t));
  EXPECT_TRUE(test::close_by_flash_rule(y, ref, plain, dt(), "linear"));
}

void check_linear_bias(test::OpEnv& env, NK s, int64_t M, bool accumulate, int64_t offset,
                       uint32_t seed) {
  FDPP_OP_ENV(env);
  // offset 0: the bias sits 256-byte aligned (the epilogue); 1 element in: 2-byte
  // aligned, so the separate bias kernel adds it after the GEMM.
  SCOPED_TRACE(::testing::Message()
               << "M " << M << " N " << s.N << " K " << s.K
               << (accumulate ? " accumulate" : "") << " bias offset " << offset);
  std::vector<float> x = test::random_normal(M * s.K, 1.f, ++seed, dt());
  std::vector<float> w = test::random_normal(
      s.N * s.K, 1.f / std::sqrt(static_cast<float>(s.K)), ++seed, dt());
  std::vector<float> b = test::random_normal(s.N + 1, 1.f, ++seed, dt());
  const std::vector<float> bias(b.begin() + offset, b.begin() + offset + s.N);
  std::vector<float> y0 = test::random_normal(M * s.N, 1.f, ++seed, dt());
  std::vector<float> ref = y0;
  std::vector<float> bias_host = bias;
  FDPP_GPU_ASSERT_OK(
      cpu_->linear(test::host_view(x, {M, s.K}), test::host_view(w, {s.N, s.K}),
                   test::host_view(ref, {M, s.N}),
                   {.accumulate = accumulate, .bias = test::host_view(bias_host, {s.N})}));
  const auto plain = test::plain_linear(x, w, bias, y0, M, s.N, s.K, accumulate, dt());
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {M, s.K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {s.N, s.K}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_b, test::upload(*gpu_, b, dt(), {s.N + 1}));
  const Tensor d_bias(static_cast<char*>(d_b.t.data) + 2 * offset, dt(), Device::kCUDA,
                      {s.N});
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_y,
                                accumulate ? test::upload(*gpu_, y0, dt(), {M, s.N})
                                           : test::alloc_poisoned(*gpu_, dt(), {M, s.N}));
  FDPP_GPU_ASSERT_OK(
      gpu_->linear(d_x.t, d_w.t, d_y.t, {.accumulate = accumulate, .bias = d_bias}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto y, test::download(*gpu_, d_y.t));
  // The fallback rounds twice (GEMM, then + bias): allow one more ulp of the output.
  const double extra = offset ? test::dtype_epsilon(dt()) * test::max_abs(ref) : 0.0;
  EXPECT_TRUE(
      test::close_by_flash_rule(y, ref, plain, dt(), "linear + bias", 1e-6 + extra));
}

// Reads x and w, reads (accumulate) and writes y: 2·M·N·K flops.
Result<test::PerfLaunch> perf_linear(test::OpEnv& env, NK s, int64_t M, bool accumulate) {
  const DType dt = env.dtype;
  cuda::CudaBackend& be = *env.gpu;
  test::PerfLaunch p;
  FDPP_ASSIGN_OR_RETURN(DeviceTensor x,
                        test::upload(be, test::random_normal(M * s.K, 1.f, 1, dt), dt, {M, s.K}));
  FDPP_ASSIGN_OR_RETURN(
      DeviceTensor w,
      test::upload(be, test::random_normal(s.N * s.K, 1.f / std::sqrt(float(s.K)), 2, dt), dt,
                   {s.N, s.K}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor y,
                        test::upload(be, test::random_normal(M * s.N, 1.f, 3, dt), dt, {M, s.N}));
  const Tensor tx = x.t, tw = w.t, ty = y.t;
  p.launch = [&be, tx, tw, ty, accumulate] {
    return be.linear(tx, tw, ty, {.accumulate = accumulate});
  };
  p.bytes = static_cast<double>((M * s.K + s.N * s.K + (accumulate ? 2 : 1) * M * s.N) *
                                dtype_size(dt));
  p.flops = 2.0 * M * s.N * s.K;
  p.hold(std::move(x), std::move(w), std::move(y));
  return p;
}

void add_linear_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 500;  // the old sweep's seeds: three per case, in loop order
    for (NK s : {NK{72, 72}, NK{4104, 72}, NK{72, 4104}, NK{5112, 520}, NK{520, 5112}})
      for (int64_t M : {1, 3, 8, 17})
        for (bool acc : {false, true}) {
          cases.push_back(
              {"linear", test::shape_name({{"M", M}, {"N", s.N}, {"K", s.K}, {"acc", acc}}), dtype,
               [=](test::OpEnv& e) { check_linear(e, s, M, acc, seed); },
               [=](test::OpEnv& e) { return perf_linear(e, s, M, acc); }});
          seed += 3;
        }
    seed = 1000;  // four per case
    for (NK s : {NK{72, 72}, NK{4104, 520}, NK{520, 4104}, NK{13, 40}})
      for (int64_t M : {1, 3, 17})
        for (bool acc : {false, true})
          for (int64_t offset : {0, 1}) {
            cases.push_back({"linear_bias",
                             test::shape_name({{"M", M}, {"N", s.N}, {"K", s.K}, {"acc", acc},
                                               {"offset", offset}}),
                             dtype,
                             [=](test::OpEnv& e) {
                               check_linear_bias(e, s, M, acc, offset, seed);
                             },
                             {}});
            seed += 4;
          }
  }
}
FDPP_REGISTER_OP_CASES(add_linear_cases);

class LinearOps : public test::CpuAndCudaBackends {};
INSTANTIATE_TEST_SUITE_P(Dtypes, LinearOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

// The end of the old LinearBiasEpilogueAndFallback, which followed its sweep.
TEST_P(LinearOps, LinearBiasOfTheWrongLengthIsRefused) {
  // A bias of the wrong length or dtype is refused before anything runs.
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor x,
                                test::upload(*gpu_, std::vector<float>(8, 1.f), dt(), {2, 4}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor w,
                                test::upload(*gpu_, std::vector<float>(12, 1.f), dt(), {3, 4}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor bad,
                                test::upload(*gpu_, std::vector<float>(4, 1.f), dt(), {4}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor y, test::alloc_poisoned(*gpu_, dt(), {2, 3}));
  const Status s = gpu_->linear(x.t, w.t, y.t, {.bias = bad.t});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("bias"), std::string::npos);
}

}  // namespace
}  // namespace fdpp
