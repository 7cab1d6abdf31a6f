// embed and embed_add: the harness's table cases (CUDA vs the CPU reference, the old
// sweeps' shapes and seeds, f16 and bf16) and the out-of-range-ids TEST. Both ops copy or
// add once in fp32 and round once, so the result must equal the (rounded) reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

using test::DeviceTensor;

struct Shape2 {
  int64_t V, H;
};

void check_embedding(test::OpEnv& env, Shape2 s, int64_t T, uint32_t seed) {
  FDPP_OP_ENV(env);
  SCOPED_TRACE(::testing::Message() << "V " << s.V << " H " << s.H << " T " << T);
  std::vector<float> table = test::random_normal(s.V * s.H, 1.f, ++seed, dt());
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t) ids[t] = static_cast<int32_t>((t * 7 + seed) % s.V);
  std::vector<float> ref(T * s.H);
  FDPP_GPU_ASSERT_OK(cpu_->embed(test::host_view(ids, {T}), test::host_view(table, {s.V, s.H}),
                                 test::host_view(ref, {T, s.H})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_table,
                                test::upload(*gpu_, table, dt(), {s.V, s.H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_ids, test::upload_i32(*gpu_, ids, {T}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out,
                                test::alloc_poisoned(*gpu_, dt(), {T, s.H}));
  FDPP_GPU_ASSERT_OK(gpu_->embed(d_ids.t, d_table.t, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  EXPECT_EQ(out, ref) << "a copy must be exact";
}

void check_embed_add(test::OpEnv& env, int64_t H, uint32_t seed) {
  FDPP_OP_ENV(env);
  const int64_t V = 37, T = 5;
  std::vector<float> table = test::random_normal(V * H, 1.f, ++seed, dt());
  std::vector<float> x = test::random_normal(T * H, 1.f, ++seed, dt());
  std::vector<int32_t> ids = {0, 36, 5, 5, 17};
  std::vector<float> ref = x;
  FDPP_GPU_ASSERT_OK(cpu_->embed_add(test::host_view(ids, {T}), test::host_view(table, {V, H}),
                                     test::host_view(ref, {T, H})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_table, test::upload(*gpu_, table, dt(), {V, H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_ids, test::upload_i32(*gpu_, ids, {T}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_x, test::upload(*gpu_, x, dt(), {T, H}));
  FDPP_GPU_ASSERT_OK(gpu_->embed_add(d_ids.t, d_table.t, d_x.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_x.t));
  // One fp32 add of two dtype values, rounded once: exactly the rounded reference.
  EXPECT_EQ(out, test::round_all(dt(), ref)) << "H " << H;
}

// Reads T rows of the table and writes them (embed_add also reads x).
Result<test::PerfLaunch> perf_embed(test::OpEnv& env, int64_t V, int64_t H, int64_t T,
                                    bool add) {
  const DType dt = env.dtype;
  cuda::CudaBackend& be = *env.gpu;
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t) ids[t] = static_cast<int32_t>((t * 7) % V);
  test::PerfLaunch p;
  FDPP_ASSIGN_OR_RETURN(DeviceTensor table,
                        test::upload(be, test::random_normal(V * H, 1.f, 1, dt), dt, {V, H}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor d_ids, test::upload_i32(be, ids, {T}));
  FDPP_ASSIGN_OR_RETURN(DeviceTensor out,
                        test::upload(be, test::random_normal(T * H, 1.f, 2, dt), dt, {T, H}));
  const Tensor tt = table.t, ti = d_ids.t, to = out.t;
  if (add)
    p.launch = [&be, ti, tt, to] { return be.embed_add(ti, tt, to); };
  else
    p.launch = [&be, ti, tt, to] { return be.embed(ti, tt, to); };
  p.bytes = static_cast<double>((add ? 3 : 2) * T * H * dtype_size(dt));
  p.hold(std::move(table), std::move(d_ids), std::move(out));
  return p;
}

void add_embed_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 100;  // the old sweep's seeds: one per case, in loop order
    for (Shape2 s : {Shape2{37, 64}, Shape2{37, 72}, Shape2{19, 13}, Shape2{512, 64},
                     Shape2{100, 4104}})
      for (int64_t T : {1, 3, 17}) {
        cases.push_back({"embed", test::shape_name({{"V", s.V}, {"H", s.H}, {"T", T}}), dtype,
                         [=](test::OpEnv& e) { check_embedding(e, s, T, seed); },
                         [=](test::OpEnv& e) { return perf_embed(e, s.V, s.H, T, false); }});
        seed += 1;
      }
    seed = 800;  // two per case
    for (int64_t H : {13, 64, 4096}) {
      cases.push_back({"embed_add", test::shape_name({{"V", 37}, {"H", H}, {"T", 5}}), dtype,
                       [=](test::OpEnv& e) { check_embed_add(e, H, seed); },
                       [=](test::OpEnv& e) { return perf_embed(e, 37, H, 5, true); }});
      seed += 2;
    }
  }
}
FDPP_REGISTER_OP_CASES(add_embed_cases);

class EmbedOps : public test::CpuAndCudaBackends {};
INSTANTIATE_TEST_SUITE_P(Dtypes, EmbedOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

TEST_P(EmbedOps, EmbeddingOutOfRangeIdsWriteZeros) {
  const int64_t V = 5, H = 16;
  std::vector<float> table = test::random_normal(V * H, 1.f, 7, dt());
  const std::vector<int32_t> ids = {-1, 5, 1 << 30, 2};
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_table, test::upload(*gpu_, table, dt(), {V, H}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_ids, test::upload_i32(*gpu_, ids, {4}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_out, test::alloc_poisoned(*gpu_, dt(), {4, H}));
  FDPP_GPU_ASSERT_OK(gpu_->embed(d_ids.t, d_table.t, d_out.t));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto out, test::download(*gpu_, d_out.t));
  for (int64_t i = 0; i < 3 * H; ++i) EXPECT_EQ(out[i], 0.f) << i;
  for (int64_t i = 0; i < H; ++i) EXPECT_EQ(out[3 * H + i], table[2 * H + i]) << i;
}

}  // namespace
}  // namespace fdpp
