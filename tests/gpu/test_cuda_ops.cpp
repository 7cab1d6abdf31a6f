// Every CUDA op except attention (test_cuda_decode.cpp) against the CPU
// reference on the same dtype-rounded inputs, in f16 and bf16, on odd sizes.
// Outputs are poisoned (0xFF bytes = NaN) first, so an unwritten element fails.
// Tolerance (flash-attention's rule): error vs the fp32 reference <= 2× the
// error of a plain same-precision implementation written here, which rounds
// where Hugging Face's eager half-precision code rounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "gpu/gpu_test_util.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using test::round_to;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class CudaOps : public test::CpuAndCudaBackends {};

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

TEST(CudaBackend, AvailabilityAndBadDevice) {
  FDPP_REQUIRE_GPU();
  cuda::CudaBackendOptions o;
  o.device = 1 << 20;
  auto be = cuda::make_cuda_backend(o);
  ASSERT_FALSE(be.ok());
  EXPECT_EQ(be.status().code(), StatusCode::kInvalidArgument) << be.status().to_string();
  o.device = 0;
  o.activation_dtype = DType::kF32;
  EXPECT_EQ(cuda::make_cuda_backend(o).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(CudaOps, AllocOutOfMemoryNamesTheBytes) {
  auto b = gpu_->alloc(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kOutOfMemory) << b.status().to_string();
  EXPECT_NE(b.status().message().find("1125899906842624"), std::string::npos)
      << b.status().message();
  // The failure left no error behind: the next op works.
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor t, test::upload(*gpu_, {1.f, 2.f}, dt(), {2}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto back, test::download(*gpu_, t.t));
  EXPECT_EQ(back, (std::vector<float>{1.f, 2.f}));
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(cuda::DeviceMemory mem, gpu_->memory_info());
  EXPECT_GT(mem.total_bytes, mem.free_bytes);
}

TEST_P(CudaOps, Embedding) {
  struct Shape2 {
    int64_t V, H;
  };
  uint32_t seed = 100;
  for (Shape2 s : {Shape2{37, 64}, Shape2{37, 72}, Shape2{19, 13}, Shape2{512, 64},
                   Shape2{100, 4104}}) {
    for (int64_t T : {1, 3, 17}) {
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
  }
}

TEST_P(CudaOps, EmbeddingOutOfRangeIdsWriteZeros) {
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

TEST_P(CudaOps, RmsNorm) {
  const float eps = 1e-5f;
  uint32_t seed = 200;
  for (int64_t H : {8, 13, 64, 72, 1025, 4096, 5112}) {
    for (int64_t T : {1, 3, 8, 17}) {
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
  }
}

TEST_P(CudaOps, RmsNormUnalignedRowsTakeTheScalarPath) {
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

TEST_P(CudaOps, SiluMul) {
  uint32_t seed = 300;
  for (int64_t F : {8, 13, 172, 11008}) {
    for (int64_t M : {1, 3, 8}) {
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
  }
}

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

TEST_P(CudaOps, Argmax) {
  uint32_t seed = 400;
  for (int64_t V : {13, 512, 1025, 32000, 128256}) {  // 128256: several rounds of loads
    for (int64_t B : {1, 3, 8}) {
      const std::vector<float> logits = test::random_normal(B * V, 3.f, ++seed, dt());
      check_argmax(*cpu_, *gpu_, logits, B, V, dt(),
                   "V " + std::to_string(V) + " B " + std::to_string(B));
      // f32 logits (an LM head that outputs fp32) take the same kernel.
      check_argmax(*cpu_, *gpu_, test::random_normal(B * V, 3.f, ++seed), B, V, DType::kF32,
                   "f32 V " + std::to_string(V));
    }
  }
}

TEST_P(CudaOps, ArgmaxTiesNanAndInfinities) {
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

TEST_P(CudaOps, Linear) {
  struct NK {
    int64_t N, K;
  };
  uint32_t seed = 500;
  for (NK s : {NK{72, 72}, NK{4104, 72}, NK{72, 4104}, NK{5112, 520}, NK{520, 5112}}) {
    for (int64_t M : {1, 3, 8, 17}) {
      for (bool accumulate : {false, true}) {
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
    }
  }
}

// HF's half-precision RoPE: cos/sin computed in fp32 and stored in dtype, then
// q·cos + rotate_half(q)·sin with every product and the sum rounded to dtype.
float plain_rot(float x0, float x1, float c, float s, bool second, DType dt) {
  const float cr = round_to(dt, c), sr = round_to(dt, s);
  return second ? round_to(dt, round_to(dt, x1 * cr) + round_to(dt, x0 * sr))
                : round_to(dt, round_to(dt, x0 * cr) + round_to(dt, -x1 * sr));
}
std::vector<float> plain_rope_head(const float* x, int D, int R, bool inter, int pos,
                                   const std::vector<float>& inv_freq, DType dt) {
  std::vector<float> out(x, x + D);
  for (int i = 0; i < R / 2; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const int a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + R / 2;
    out[a] = plain_rot(x[a], x[b], std::cos(angle), std::sin(angle), false, dt);
    out[b] = plain_rot(x[a], x[b], std::cos(angle), std::sin(angle), true, dt);
  }
  return out;
}

TEST_P(CudaOps, RopeAndAppendKv) {
  struct Cfg {
    int n_heads, n_kv, D, R;
    bool interleaved;
  };
  uint32_t seed = 600;
  for (Cfg c : {Cfg{4, 2, 8, 8, false}, Cfg{8, 8, 64, 64, false}, Cfg{8, 2, 128, 128, true},
                Cfg{4, 1, 128, 64, false}, Cfg{3, 1, 64, 32, true}, Cfg{2, 2, 256, 256, false}}) {
    for (int64_t T : {1, 3, 8}) {
      SCOPED_TRACE(::testing::Message() << "heads " << c.n_heads << "/" << c.n_kv << " D " << c.D
                                        << " R " << c.R << (c.interleaved ? " interleaved" : "")
                                        << " T " << T);
      KVCacheLayout layout;
      layout.n_layers = 2;
      layout.n_slots = 3;
      layout.n_kv_heads = c.n_kv;
      layout.capacity = 4100;  // positions up to 4099: large angles
      layout.head_dim = c.D;
      const int layer = 1;
      const int64_t width = int64_t{c.n_heads + 2 * c.n_kv} * c.D;
      std::vector<float> qkv = test::random_normal(T * width, 1.f, ++seed, dt());
      std::vector<int32_t> pos(T), slots(T);
      for (int64_t t = 0; t < T; ++t) {
        slots[t] = static_cast<int32_t>(t % layout.n_slots);
        pos[t] = static_cast<int32_t>((t * 1361 + 4099) % layout.capacity);  // distinct per slot
      }
      std::vector<float> inv_freq(c.R / 2);
      for (int i = 0; i < c.R / 2; ++i)
        inv_freq[i] = 1.f / std::pow(10000.f, static_cast<float>(2 * i) / c.R);

      FDPP_GPU_ASSERT_OK_AND_ASSIGN(KVCache cpu_cache, cpu_->alloc_kv_cache(layout));
      std::vector<float> q_ref(T * c.n_heads * c.D);
      RopeAppendArgs a;
      a.qkv = test::host_view(qkv, {T, width});
      a.positions = test::host_view(pos, {T});
      a.slots = test::host_view(slots, {T});
      a.inv_freq = test::host_view(inv_freq, {c.R / 2});
      a.rotary_dim = c.R;
      a.interleaved = c.interleaved;
      a.cache = &cpu_cache;
      a.layer = layer;
      a.q_out = test::host_view(q_ref, {T, c.n_heads, c.D});
      FDPP_GPU_ASSERT_OK(cpu_->rope_and_append_kv(a));

      FDPP_GPU_ASSERT_OK_AND_ASSIGN(KVCache gpu_cache, gpu_->alloc_kv_cache(layout));
      const int64_t cache_elems = layout.n_layers * layout.elements_per_layer();
      const Tensor k_all(gpu_cache.k.data(), dt(), Device::kCUDA, {cache_elems});
      const Tensor v_all(gpu_cache.v.data(), dt(), Device::kCUDA, {cache_elems});
      FDPP_GPU_ASSERT_OK(gpu_->fill_bytes(k_all, 0xFF));
      FDPP_GPU_ASSERT_OK(gpu_->fill_bytes(v_all, 0xFF));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_qkv, test::upload(*gpu_, qkv, dt(), {T, width}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_pos, test::upload_i32(*gpu_, pos, {T}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_slots, test::upload_i32(*gpu_, slots, {T}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_freq,
                                    test::upload(*gpu_, inv_freq, DType::kF32, {c.R / 2}));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor d_q,
                                    test::alloc_poisoned(*gpu_, dt(), {T, c.n_heads, c.D}));
      a.qkv = d_qkv.t;
      a.positions = d_pos.t;
      a.slots = d_slots.t;
      a.inv_freq = d_freq.t;
      a.cache = &gpu_cache;
      a.q_out = d_q.t;
      FDPP_GPU_ASSERT_OK(gpu_->rope_and_append_kv(a));

      // q_out against the reference and the plain HF-style rotation.
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto q, test::download(*gpu_, d_q.t));
      std::vector<float> q_plain, k_ref, k_plain, k_got, v_ref, v_got;
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto k_cache, test::download(*gpu_, k_all));
      FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto v_cache, test::download(*gpu_, v_all));
      const float* cpu_k = static_cast<const float*>(cpu_cache.k.data());
      const float* cpu_v = static_cast<const float*>(cpu_cache.v.data());
      for (int64_t t = 0; t < T; ++t) {
        const float* row = qkv.data() + t * width;
        for (int h = 0; h < c.n_heads; ++h) {
          auto p = plain_rope_head(row + h * c.D, c.D, c.R, c.interleaved, pos[t], inv_freq, dt());
          q_plain.insert(q_plain.end(), p.begin(), p.end());
        }
        for (int g = 0; g < c.n_kv; ++g) {
          const int64_t at = layout.offset(layer, slots[t], g, pos[t]);
          auto p = plain_rope_head(row + (c.n_heads + g) * c.D, c.D, c.R, c.interleaved, pos[t],
                                   inv_freq, dt());
          k_plain.insert(k_plain.end(), p.begin(), p.end());
          k_ref.insert(k_ref.end(), cpu_k + at, cpu_k + at + c.D);
          k_got.insert(k_got.end(), k_cache.begin() + at, k_cache.begin() + at + c.D);
          v_ref.insert(v_ref.end(), cpu_v + at, cpu_v + at + c.D);
          v_got.insert(v_got.end(), v_cache.begin() + at, v_cache.begin() + at + c.D);
        }
      }
      EXPECT_TRUE(test::close_by_flash_rule(q, q_ref, q_plain, dt(), "rope q"));
      EXPECT_TRUE(test::close_by_flash_rule(k_got, k_ref, k_plain, dt(), "rope k (cache)"));
      EXPECT_EQ(v_got, v_ref) << "v is stored unrotated, exactly";
      // Nothing else in the cache was touched (still NaN).
      int64_t written = 0;
      for (int64_t i = 0; i < cache_elems; ++i) written += !std::isnan(k_cache[i]);
      EXPECT_EQ(written, T * c.n_kv * c.D) << "stray writes into the K cache";
    }
  }
}

}  // namespace
}  // namespace fdpp
