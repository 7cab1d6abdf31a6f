// argmax: the harness's table cases (CUDA vs the CPU reference on random logits of every
// V × B of the old sweep, in the case's dtype and in f32) and the ties/NaN/infinity TEST.
// The reference runs on the same dtype-rounded logits, so ties created by the rounding
// resolve identically: the result must match exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

using test::DeviceTensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The CPU reference on the same (dtype-rounded) logits, so ties created by the
// rounding resolve identically: the result must match exactly.
void check_argmax(Backend& cpu, cuda::CudaBackend& gpu, std::vector<float> logits, int64_t B,
                  int64_t V, DType dtype, const std::string& what) {
  SCOPED_TRACE(what);
  logits = test::round_all(dtype, std::move(logits));  // e.g. -1e30 is -inf in f16
  std::vector<int32_t> ref(B);
  FDPP_GPU_ASSERT_OK(cpu.argmax(test::host_view(logits, {B, V}), test::host_view(ref, {B})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_logits, test::upload(gpu, logits, dtype, {B, V}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_ids, test::alloc_poisoned(gpu, DType::kI32, {B}));
  FDPP_GPU_ASSERT_OK(gpu.argmax(d_logits.t, d_ids.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto ids, test::download_i32(gpu, d_ids.t));
  EXPECT_EQ(ids, ref);
}

void check_argmax_random(test::OpEnv& env, int64_t V, int64_t B, uint32_t seed) {
  FDPP_OP_ENV(env);
  const std::vector<float> logits = test::random_normal(B * V, 3.f, ++seed, dt());
  check_argmax(*cpu_, *gpu_, logits, B, V, dt(),
               "V " + std::to_string(V) + " B " + std::to_string(B));
  // f32 logits (an LM head that outputs fp32) take the same kernel.
  check_argmax(*cpu_, *gpu_, test::random_normal(B * V, 3.f, ++seed), B, V, DType::kF32,
               "f32 V " + std::to_string(V));
}

// Reads the logits once.
Result<test::PerfLaunch> perf_argmax(test::OpEnv& env, int64_t V, int64_t B) {
  const DType dt = env.dtype;
  cuda::CudaBackend& be = *env.gpu;
  test::PerfLaunch p;
  FDPP_ASSIGN_OR_RETURN(DeviceTensor logits,
                        test::upload(be, test::random_normal(B * V, 3.f, 1, dt), dt, {B, V}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor ids, test::alloc_poisoned(be, DType::kI32, {B}));
  const Tensor tl = logits.t, ti = ids.t;
  p.launch = [&be, tl, ti] { return be.argmax(tl, ti); };
  p.bytes = static_cast<double>(B * V * dtype_size(dt));
  p.hold(std::move(logits), std::move(ids));
  return p;
}

void add_argmax_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 400;  // the old sweep's seeds: two per case, in loop order
    for (int64_t V : {13, 512, 1025, 32000, 128256})  // 128256: several rounds of loads
      for (int64_t B : {1, 3, 8}) {
        cases.push_back({"argmax", test::shape_name({{"V", V}, {"B", B}}), dtype,
                         [=](test::OpEnv& e) { check_argmax_random(e, V, B, seed); },
                         [=](test::OpEnv& e) { return perf_argmax(e, V, B); }});
        seed += 2;
      }
  }
}
FDPP_REGISTER_OP_CASES(add_argmax_cases);

class ArgmaxOps : public test::CpuAndCudaBackends {};
INSTANTIATE_TEST_SUITE_P(Dtypes, ArgmaxOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

TEST_P(ArgmaxOps, ArgmaxTiesNanAndInfinities) {
  const int64_t V = 1000, B = 6;
  std::vector<float> l(B * V, 0.f);
  l[0 * V + 700] = 5.f, l[0 * V + 300] = 5.f;        // tie: the lower index, 300
  l[1 * V + 10] = kNaN, l[1 * V + 20] = 1.f;         // NaN never wins
  for (int64_t v = 0; v < V; ++v) l[2 * V + v] = kNaN;  // all NaN: 0
  for (int64_t v = 0; v < V; ++v) l[3 * V + v] = -kInf;  // -inf is an ordinary value:
  l[3 * V + 999] = -1e30f;  // 999 (bf16), or all -inf and so 0 (f16, where -1e30 is -inf)
  l[4 * V + 512] = kInf, l[4 * V + 513] = kInf;      // +inf ties: the lower index
  for (int64_t v = 0; v < V; ++v) l[5 * V + v] = 2.f;  // all equal: 0
  check_argmax(*cpu_, *gpu_, l, B, V, dt(), "special rows");
  check_argmax(*cpu_, *gpu_, l, B, V, DType::kF32, "special rows, f32");
}

}  // namespace
}  // namespace fdpp
