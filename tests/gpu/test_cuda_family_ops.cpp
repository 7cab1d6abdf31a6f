// The CUDA ops added for OPT / ChatGLM2 against the CPU reference on the same
// dtype-rounded inputs, f16 and bf16, odd sizes, outputs poisoned first (test_cuda_ops.cpp's
// conventions): layernorm, embed_add, relu/gelu, linear with a bias (cuBLASLt's bias
// epilogue, with and without accumulate, and the separate bias kernel a misaligned bias
// falls back to), and rope_and_append_kv with rotary_dim 0 (OPT: append without rotating).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gpu/gpu_test_util.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using test::round_to;

class CudaFamilyOps : public test::CpuAndCudaBackends {};

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaFamilyOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

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

TEST_P(CudaFamilyOps, LayerNorm) {
  const float eps = 1e-5f;
  uint32_t seed = 700;
  // 13: scalar path; 64/72/1024: warp per row; 1032/4096/5112: CTA per row.
  for (int64_t H : {13, 64, 72, 1024, 1032, 4096, 5112}) {
    for (int64_t T : {1, 3, 17}) {
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
  }
}

TEST_P(CudaFamilyOps, LayerNormUnalignedRowsTakeTheScalarPath) {
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

TEST_P(CudaFamilyOps, EmbedAdd) {
  uint32_t seed = 800;
  for (int64_t H : {13, 64, 4096}) {
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
}

TEST_P(CudaFamilyOps, ReluAndGelu) {
  uint32_t seed = 900;
  for (int64_t N : {7, 64, 16384}) {
    const int64_t M = 3;
    std::vector<float> x = test::random_normal(M * N, 3.f, ++seed, dt());
    for (Activation act : {Activation::kRelu, Activation::kGelu}) {
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
  }
}

TEST_P(CudaFamilyOps, LinearBiasEpilogueAndFallback) {
  struct NK {
    int64_t N, K;
  };
  uint32_t seed = 1000;
  for (NK s : {NK{72, 72}, NK{4104, 520}, NK{520, 4104}, NK{13, 40}}) {
    for (int64_t M : {1, 3, 17}) {
      for (bool accumulate : {false, true}) {
        // offset 0: the bias sits 256-byte aligned (the epilogue); 1 element in: 2-byte
        // aligned, so the separate bias kernel adds it after the GEMM.
        for (int64_t offset : {0, 1}) {
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
      }
    }
  }
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

TEST_P(CudaFamilyOps, RopeWithRotaryDimZeroAppendsUnrotated) {
  KVCacheLayout layout;
  layout.n_layers = 1;
  layout.n_slots = 2;
  layout.n_kv_heads = 3;
  layout.capacity = 64;
  layout.head_dim = 16;
  const int64_t T = 4, H = 3, width = 3 * H * 16;
  std::vector<float> qkv = test::random_normal(T * width, 1.f, 77, dt());
  const std::vector<int32_t> pos = {0, 1, 63, 5}, slots = {0, 0, 1, 1};
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(KVCache cache, gpu_->alloc_kv_cache(layout));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_qkv, test::upload(*gpu_, qkv, dt(), {T, width}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_pos, test::upload_i32(*gpu_, pos, {T}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_slots, test::upload_i32(*gpu_, slots, {T}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_q, test::alloc_poisoned(*gpu_, dt(), {T, H, 16}));
  RopeAppendArgs a;
  a.qkv = d_qkv.t;
  a.positions = d_pos.t;
  a.slots = d_slots.t;
  a.rotary_dim = 0;  // no inv_freq table at all
  a.cache = &cache;
  a.layer = 0;
  a.q_out = d_q.t;
  FDPP_GPU_ASSERT_OK(gpu_->rope_and_append_kv(a));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto q, test::download(*gpu_, d_q.t));
  const int64_t n = layout.elements_per_layer();
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(
      auto k, test::download(*gpu_, Tensor(cache.k.data(), dt(), Device::kCUDA, {n})));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(
      auto v, test::download(*gpu_, Tensor(cache.v.data(), dt(), Device::kCUDA, {n})));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int d = 0; d < 16; ++d) {
        const float* row = qkv.data() + t * width;
        EXPECT_EQ(q[(t * H + h) * 16 + d], row[h * 16 + d]);
        const int64_t at = layout.offset(0, slots[t], static_cast<int>(h), pos[t]) + d;
        EXPECT_EQ(k[at], row[(H + h) * 16 + d]);
        EXPECT_EQ(v[at], row[(2 * H + h) * 16 + d]);
      }
}

}  // namespace
}  // namespace fdpp
