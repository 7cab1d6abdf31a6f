// rope_and_append_kv: the harness's table cases (CUDA vs the CPU reference, every head
// layout × T of the old sweep, the same seeds, f16 and bf16) and the rotary_dim 0 TEST
// (OPT: append without rotating). q and k: flash-attention's rule against HF's
// half-precision rotation; v and the untouched cache: exact.
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

struct Cfg {
  int n_heads, n_kv, D, R;
  bool interleaved;
};

void check_rope(test::OpEnv& env, Cfg c, int64_t T, uint32_t seed) {
  FDPP_OP_ENV(env);
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

void add_rope_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    uint32_t seed = 600;  // the old sweep's seeds: one per case, in loop order
    for (Cfg c : {Cfg{4, 2, 8, 8, false}, Cfg{8, 8, 64, 64, false}, Cfg{8, 2, 128, 128, true},
                  Cfg{4, 1, 128, 64, false}, Cfg{3, 1, 64, 32, true}, Cfg{2, 2, 256, 256, false}})
      for (int64_t T : {1, 3, 8}) {
        cases.push_back({"rope_and_append_kv",
                         test::shape_name({{"H", c.n_heads}, {"KV", c.n_kv}, {"D", c.D},
                                           {"R", c.R}, {"inter", c.interleaved}, {"T", T}}),
                         dtype, [=](test::OpEnv& e) { check_rope(e, c, T, seed); }, {}});
        seed += 1;
      }
  }
}
FDPP_REGISTER_OP_CASES(add_rope_cases);

class RopeOps : public test::CpuAndCudaBackends {};
INSTANTIATE_TEST_SUITE_P(Dtypes, RopeOps, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

TEST_P(RopeOps, RopeWithRotaryDimZeroAppendsUnrotated) {
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
