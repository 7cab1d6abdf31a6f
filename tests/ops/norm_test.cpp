// rmsnorm and layernorm: the harness's table cases (CUDA vs the CPU reference, every
// H × T × dtype of the old sweeps, the same seeds) and the unaligned-row TESTs. Tolerance
// (flash-attention's rule): error vs the fp32 reference <= 2× the error of a plain
// same-precision implementation written here, which rounds where Hugging Face's (torch's)
// eager half-precision code rounds.
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
using test::round_to;

// Hugging Face's half-precision RMSNorm: fp32 statistics, the normalised row
// stored in dtype, then a dtype multiply by the weight.
std::vector<float> plain_rmsnorm(const std::vector<float>& x, const std::vector<float>& w,
                                 int64_t T, int64_t H, float eps, DType dt) {
  std::vector<float> out(T * H);
  for (int64_t t = 0; t < T; ++t) {
    float ss = 0.f;
    for (int64_t i = 0; i < H; ++i) ss += x[t * H + i] * x[t * H + i];
    const float rs = 1.f / std::sqrt(ss / static_cast<float>(H) + eps);
    for (int64_t i = 0; i < H; ++i)
      out[t * H + i] = round_to(dt, w[i] * round_to(dt, x[t * H + i] * rs));
  }
  return out;
}


// torch's half-precision LayerNorm: fp32 statistics and affine map, one rounding.
std::vector<float> plain_layernorm(const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& b, int64_t T, int64_t H, float eps,
                                   DType dt) {
  std::vector<float> out(T * H);
  for (int64_t t = 0; t < T; ++t) {
    float mean = 0.f, var = 0.f;
    for (int64_t i = 0; i < H; ++i) mean += x[t * H + i];
    mean /= static_cast<float>(H);
    for (int64_t i = 0; i < H; ++i) var += (x[t * H + i] - mean) * (x[t * H + i] - mean);
    const float rs = 1.f / std::sqrt(var / static_cast<float>(H) + eps);
    for (int64_t i = 0; i < H; ++i)
      out[t * H + i] = round_to(dt, (x[t * H + i] - mean) * rs * w[i] + b[i]);
  }
  return out;
}

void check_rmsnorm(test::OpEnv& env, int64_t H, int64_t T, uint32_t seed) {
  FDPP_OP_ENV(env);
  const float eps = 1e-5f;
  SCOPED_TRACE(::testing::Message() << "H " << H << " T " << T);
  std::vector<float> x = test::random_normal(T * H, 1.f, ++seed, dt());
  std::vector<float> w = test::random_uniform(H, 0.5f, 1.5f, ++seed, dt());
  std::vector<float> ref(T * H);
  FDPP_GPU_ASSERT_OK(cpu_->rmsnorm(test::host_view(x, {T, H}), test::host_view(w, {H}), eps,
                                   test::host_view(ref, {T, H})));
  const std::vector<float> plain = plain_rmsnorm(x, w, T, H, eps, dt());
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK(gpu_->rmsnorm(d_x.t, d_w.t, eps, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain, dt(), "rmsnorm"));
  // In place gives the same bits.
  FDPP_GPU_ASSERT_OK(gpu_->rmsnorm(d_x.t, d_w.t, eps, d_x.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto in_place, test::download(*gpu_, d_x.t));
  EXPECT_EQ(in_place, out);
}

void check_layernorm(test::OpEnv& env, int64_t H, int64_t T, uint32_t seed) {
  FDPP_OP_ENV(env);
  const float eps = 1e-5f;
  SCOPED_TRACE(::testing::Message() << "H " << H << " T " << T);
  // An offset row mean, as in OPT's residual stream.
  std::vector<float> x = test::random_normal(T * H, 1.f, ++seed);
  for (float& v : x) v = r(v + 4.f);
  std::vector<float> w = test::random_uniform(H, 0.5f, 1.5f, ++seed, dt());
  std::vector<float> b = test::random_uniform(H, -0.5f, 0.5f, ++seed, dt());
  std::vector<float> ref(T * H);
  FDPP_GPU_ASSERT_OK(cpu_->layernorm(test::host_view(x, {T, H}), test::host_view(w, {H}),
                                     test::host_view(b, {H}), eps,
                                     test::host_view(ref, {T, H})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_b, test::upload(*gpu_, b, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK(gpu_->layernorm(d_x.t, d_w.t, d_b.t, eps, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain_layernorm(x, w, b, T, H, eps, dt()),
                                        dt(), "layernorm"));
  FDPP_GPU_ASSERT_OK(gpu_->layernorm(d_x.t, d_w.t, d_b.t, eps, d_x.t));  // in place
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto in_place, test::download(*gpu_, d_x.t));
  EXPECT_EQ(in_place, out);
}

// Reads x and the weight(s), writes the output: one pass each.
Result<test::PerfLaunch> perf_norm(test::OpEnv& env, int64_t H, int64_t T, bool layer) {
  const DType dt = env.dtype;
  test::PerfLaunch p;
  cuda::CudaBackend& be = *env.gpu;
  FDPP_ASSIGN_OR_RETURN(DeviceTensor x,
                        test::upload(be, test::random_normal(T * H, 1.f, 1, dt), dt, {T, H}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor w,
                        test::upload(be, test::random_uniform(H, 0.5f, 1.5f, 2, dt), dt, {H}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor b,
                        test::upload(be, test::random_uniform(H, -0.5f, 0.5f, 3, dt), dt, {H}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor out, test::alloc_poisoned(be, dt, {T, H}));
  const Tensor tx = x.t, tw = w.t, tb = b.t, to = out.t;
  if (layer)
    p.launch = [&be, tx, tw, tb, to] { return be.layernorm(tx, tw, tb, 1e-5f, to); };
  else
    p.launch = [&be, tx, tw, to] { return be.rmsnorm(tx, tw, 1e-5f, to); };
  p.bytes = static_cast<double>((2 * T * H + (layer ? 2 : 1) * H) * dtype_size(dt));
  p.hold(std::move(x), std::move(w), std::move(b), std::move(out));
  return p;
}

void add_norm_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 200;  // the old sweep's seeds: two per case, in loop order
    for (int64_t H : {8, 13, 64, 72, 1025, 4096, 5112})
      for (int64_t T : {1, 3, 8, 17}) {
        cases.push_back({"rmsnorm", test::shape_name({{"H", H}, {"T", T}}), dtype,
                         [=](test::OpEnv& e) { check_rmsnorm(e, H, T, seed); },
                         [=](test::OpEnv& e) { return perf_norm(e, H, T, false); }});
        seed += 2;
      }
    seed = 700;  // three per case
    // 13: scalar path; 64/72/1024: warp per row; 1032/4096/5112: CTA per row.
    for (int64_t H : {13, 64, 72, 1024, 1032, 4096, 5112})
      for (int64_t T : {1, 3, 17}) {
        cases.push_back({"layernorm", test::shape_name({{"H", H}, {"T", T}}), dtype,
                         [=](test::OpEnv& e) { check_layernorm(e, H, T, seed); },
                         [=](test::OpEnv& e) { return perf_norm(e, H, T, true); }});
        seed += 3;
      }
  }
}
FDPP_REGISTER_OP_CASES(add_norm_cases);

class NormOps : public test::CpuAndCudaBackends {};
INSTANTIATE_TEST_SUITE_P(Dtypes, NormOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

TEST_P(NormOps, RmsNormUnalignedRowsTakeTheScalarPath) {
  // A view starting one element into a buffer is 2 bytes off 16-byte alignment:
  // the element-wise path it takes must be just as right.
  const int64_t T = 3, H = 64;
  std::vector<float> x = test::random_normal(T * H + 1, 1.f, 5, dt());
  std::vector<float> w = test::random_uniform(H, 0.5f, 1.5f, 6, dt());
  std::vector<float> x_rows(x.begin() + 1, x.end());
  std::vector<float> ref(T * H);
  FDPP_GPU_ASSERT_OK(cpu_->rmsnorm(test::host_view(x_rows, {T, H}), test::host_view(w, {H}), 1e-6f,
                                   test::host_view(ref, {T, H})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {T * H + 1}));
  const Tensor x_view(static_cast<char*>(d_x.t.data) + 2, dt(), Device::kCUDA, {T, H});
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK(gpu_->rmsnorm(x_view, d_w.t, 1e-6f, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain_rmsnorm(x_rows, w, T, H, 1e-6f, dt()),
                                        dt(), "rmsnorm (unaligned)"));
}

TEST_P(NormOps, LayerNormUnalignedRowsTakeTheScalarPath) {
  const int64_t T = 3, H = 64;
  std::vector<float> x = test::random_normal(T * H + 1, 1.f, 5, dt());
  std::vector<float> w = test::random_uniform(H, 0.5f, 1.5f, 6, dt());
  std::vector<float> b = test::random_uniform(H, -1.f, 1.f, 7, dt());
  std::vector<float> rows(x.begin() + 1, x.end()), ref(T * H);
  FDPP_GPU_ASSERT_OK(cpu_->layernorm(test::host_view(rows, {T, H}), test::host_view(w, {H}),
                                     test::host_view(b, {H}), 1e-5f, test::host_view(ref, {T, H})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {T * H + 1}));
  const Tensor view(static_cast<char*>(d_x.t.data) + 2, dt(), Device::kCUDA, {T, H});
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_w, test::upload(*gpu_, w, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_b, test::upload(*gpu_, b, dt(), {H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK(gpu_->layernorm(view, d_w.t, d_b.t, 1e-5f, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_TRUE(test::close_by_flash_rule(out, ref, plain_layernorm(rows, w, b, T, H, 1e-5f, dt()),
                                        dt(), "layernorm (unaligned)"));
}

}  // namespace
}  // namespace fdpp
