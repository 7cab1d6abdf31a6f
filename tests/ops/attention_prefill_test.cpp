// CUDA prefill attention (src/backend/cuda/attention/prefill*) against the CPU backend's
// attention_prefill on the same fp16/bf16-rounded inputs, over the odd-size sweep: T in
// {1, 2, 63, 65, 97, 1025}, start_pos in {0, 37} (chunked prefill), GQA 1/2/4/8, head_dim 64
// and 128 (tensor-core kernel) and 8 (generic kernel, stories260K's), fp16 and bf16.
//
// Tolerance (flash-attention's rule, test::close_by_flash_rule): max |gpu - ref| <= 2 x
// max |plain - ref| + a quarter ulp of max |ref| + 1e-6, where ref is the CPU backend (double
// accumulation, fp32 out) and `plain` the straightforward same-precision implementation
// written below (scores accumulated in fp32 and rounded to the dtype, softmax in fp32, P
// rounded to the dtype, P·V accumulated in fp32, output rounded).
// Also: the output is poisoned (0xFF bytes = NaN) first and must be fully written; the cache
// outside this (layer, slot, 0 .. start_pos+T) is garbage (NaN, then the largest finite
// value) and must not change a single output bit.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/attention/prefill.h"
#include "core/half.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

#define CUDA_OK(stmt) ASSERT_EQ((stmt), cudaSuccess) << #stmt

using test::round_to;

uint16_t encode(DType dt, float x) { return dt == DType::kF16 ? f32_to_f16(x) : f32_to_bf16(x); }
float decode(DType dt, uint16_t h) { return dt == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h); }

// Device memory owned by the test (freed with cudaFree).
struct DevMem {
  void* p = nullptr;
  DevMem() = default;
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  ~DevMem() {
    if (p != nullptr) cudaFree(p);
  }
};

// One prefill problem: inputs already rounded to the dtype (and kept as floats).
struct Problem {
  DType dt = DType::kF16;
  int T = 0, start_pos = 0, n_heads = 0, n_kv = 0, D = 0;
  // The sequence lives in layer 1, slot 1 of a 2 x 2 cache, so that the offsets of both are
  // exercised and the neighbours can hold garbage.
  KVCacheLayout layout;
  int layer = 1, slot = 1;
  float scale = 0.f;
  std::vector<float> q;  // (T, n_heads, D)
  std::vector<float> k;  // (n_kv, start_pos + T, D): the valid keys of (layer, slot)
  std::vector<float> v;  // (n_kv, start_pos + T, D)

  int kv_len() const { return start_pos + T; }
  int group() const { return n_heads / n_kv; }
};

Problem make_problem(DType dt, int T, int start_pos, int n_heads, int n_kv, int D,
                     uint64_t seed) {
  Problem p;
  p.dt = dt;
  p.T = T;
  p.start_pos = start_pos;
  p.n_heads = n_heads;
  p.n_kv = n_kv;
  p.D = D;
  p.layout = KVCacheLayout{2, 2, n_kv, start_pos + T + 11, D};  // + stale positions at the end
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::mt19937_64 rng(seed);
  // q is scaled so that scores spread over several units (std ~2): the softmax is far from
  // uniform and the running max moves between key tiles.
  const float q_amp = 6.0f;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  p.q.resize(static_cast<size_t>(T) * n_heads * D);
  for (float& x : p.q) x = round_to(dt, q_amp * u(rng));
  p.k.resize(static_cast<size_t>(n_kv) * p.kv_len() * D);
  p.v.resize(p.k.size());
  for (float& x : p.k) x = round_to(dt, u(rng));
  for (float& x : p.v) x = round_to(dt, u(rng));
  return p;
}

// The CPU backend's attention_prefill on the problem (fp32 tensors, double accumulation).
std::vector<float> cpu_reference(const Problem& p) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  Result<KVCache> cache = cpu->alloc_kv_cache(p.layout);
  EXPECT_TRUE(cache.ok()) << cache.status().to_string();
  if (!cache.ok()) return {};
  const KVCacheLayout& l = p.layout;
  const int64_t total = static_cast<int64_t>(l.n_layers) * l.elements_per_layer();
  auto* kc = static_cast<float*>(cache->k.data());  // (n_layers, n_slots, n_kv, capacity, D)
  auto* vc = static_cast<float*>(cache->v.data());
  std::fill_n(kc, total, std::numeric_limits<float>::quiet_NaN());
  std::fill_n(vc, total, std::numeric_limits<float>::quiet_NaN());
  for (int h = 0; h < p.n_kv; ++h) {
    const int64_t at = l.offset(p.layer, p.slot, h, 0);
    const size_t from = static_cast<size_t>(h) * p.kv_len() * p.D;
    std::copy_n(p.k.data() + from, static_cast<size_t>(p.kv_len()) * p.D, kc + at);
    std::copy_n(p.v.data() + from, static_cast<size_t>(p.kv_len()) * p.D, vc + at);
  }
  std::vector<float> q = p.q;
  std::vector<float> out(p.q.size(), std::numeric_limits<float>::quiet_NaN());
  AttentionPrefillArgs a;
  a.q = Tensor(q.data(), DType::kF32, Device::kCPU, Shape{p.T, p.n_heads, p.D});
  a.cache = &cache.value();
  a.layer = p.layer;
  a.slot = p.slot;
  a.start_pos = p.start_pos;
  a.scale = p.scale;
  a.out = Tensor(out.data(), DType::kF32, Device::kCPU, Shape{p.T, p.n_heads, p.D});
  const Status st = cpu->attention_prefill(a);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// The plain same-precision implementation that sets the error budget.
std::vector<float> plain_attention(const Problem& p) {
  std::vector<float> out(p.q.size());
  const int D = p.D;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int t = 0; t < p.T; ++t) {
    for (int h = 0; h < p.n_heads; ++h) {
      const int n = p.start_pos + t + 1;
      const float* q = p.q.data() + (static_cast<size_t>(t) * p.n_heads + h) * D;  // (D)
      const float* k = p.k.data() + static_cast<size_t>(h / p.group()) * p.kv_len() * D;
      const float* v = p.v.data() + static_cast<size_t>(h / p.group()) * p.kv_len() * D;
      std::vector<float> s(n);  // (n) scores, then P
      for (int j = 0; j < n; ++j) {
        float acc = 0.f;
        for (int d = 0; d < D; ++d) acc += q[d] * k[static_cast<size_t>(j) * D + d];
        s[j] = round_to(p.dt, round_to(p.dt, acc) * p.scale);  // (q·kᵀ) then / sqrt(d), in dtype
      }
      const float m = *std::max_element(s.begin(), s.end());
      float sum = 0.f;
      for (int j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - m));
      for (int j = 0; j < n; ++j) s[j] = round_to(p.dt, s[j] / sum);
      float* o = out.data() + (static_cast<size_t>(t) * p.n_heads + h) * D;
      for (int d = 0; d < D; ++d) {
        float acc = 0.f;
        for (int j = 0; j < n; ++j) acc += s[j] * v[static_cast<size_t>(j) * D + d];
        o[d] = round_to(p.dt, acc);
      }
    }
  }
  return out;
}

// Runs the CUDA kernel with `garbage` in every cache element outside the sequence's valid
// keys; returns the raw output bits (T, n_heads, D).
void run_gpu(const Problem& p, uint16_t garbage, std::vector<uint16_t>* out_bits) {
  const KVCacheLayout& l = p.layout;
  const size_t total = static_cast<size_t>(l.n_layers) * l.elements_per_layer();
  std::vector<uint16_t> kh(total, garbage), vh(total, garbage);  // (layers, slots, kv, cap, D)
  for (int h = 0; h < p.n_kv; ++h)
    for (int64_t i = 0; i < static_cast<int64_t>(p.kv_len()) * p.D; ++i) {
      const size_t at = static_cast<size_t>(l.offset(p.layer, p.slot, h, 0) + i);
      const size_t from = static_cast<size_t>(h) * p.kv_len() * p.D + i;
      kh[at] = encode(p.dt, p.k[from]);
      vh[at] = encode(p.dt, p.v[from]);
    }
  std::vector<uint16_t> qh(p.q.size());
  for (size_t i = 0; i < qh.size(); ++i) qh[i] = encode(p.dt, p.q[i]);

  DevMem dk, dv, dq, dout;
  CUDA_OK(cudaMalloc(&dk.p, total * 2));
  CUDA_OK(cudaMalloc(&dv.p, total * 2));
  CUDA_OK(cudaMalloc(&dq.p, qh.size() * 2));
  CUDA_OK(cudaMalloc(&dout.p, qh.size() * 2));
  CUDA_OK(cudaMemcpy(dk.p, kh.data(), total * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dv.p, vh.data(), total * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dq.p, qh.data(), qh.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dout.p, 0xFF, qh.size() * 2));  // poison: NaN in fp16 and bf16

  KVCache cache;  // a view of the test's memory; the Buffers must not free it
  cache.layout = l;
  cache.dtype = p.dt;
  cache.k = Buffer(dk.p, total * 2, Device::kCUDA, [](void*) {});
  cache.v = Buffer(dv.p, total * 2, Device::kCUDA, [](void*) {});
  AttentionPrefillArgs a;
  a.q = Tensor(dq.p, p.dt, Device::kCUDA, Shape{p.T, p.n_heads, p.D});
  a.cache = &cache;
  a.layer = p.layer;
  a.slot = p.slot;
  a.start_pos = p.start_pos;
  a.scale = p.scale;
  a.out = Tensor(dout.p, p.dt, Device::kCUDA, Shape{p.T, p.n_heads, p.D});
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const Status st = cuda::run_attention_prefill(a, p.dt, sms, /*stream=*/nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  CUDA_OK(cudaDeviceSynchronize());
  out_bits->resize(qh.size());
  CUDA_OK(cudaMemcpy(out_bits->data(), dout.p, qh.size() * 2, cudaMemcpyDeviceToHost));
}

// (head_dim, dtype, GQA ratio, start_pos, T)
using SweepParam = test::PrefillSweepParam;  // D, dtype, GQA, start_pos, T

// One case of the old PrefillSweep.MatchesCpuWithinTwicePlainError: the harness's
// attention_prefill cases.
void check_prefill_sweep(const SweepParam& param) {
  const auto [D, dt, ratio, start_pos, T] = param;
  const int n_kv = 2;
  const Problem p = make_problem(dt, T, start_pos, n_kv * ratio, n_kv, D,
                                 /*seed=*/1000u * T + 10u * D + ratio + start_pos);
  const std::vector<float> ref = cpu_reference(p);
  ASSERT_EQ(ref.size(), p.q.size());
  const std::vector<float> plain = plain_attention(p);

  std::vector<uint16_t> bits_nan, bits_big;
  ASSERT_NO_FATAL_FAILURE(run_gpu(p, /*garbage=*/0xFFFF, &bits_nan));  // NaN
  const uint16_t big = dt == DType::kF16 ? 0x7BFF : 0x7F7F;              // largest finite
  ASSERT_NO_FATAL_FAILURE(run_gpu(p, big, &bits_big));
  ASSERT_EQ(bits_nan.size(), ref.size());
  ASSERT_GT(bits_nan.size(), 0u);  // a test that compares nothing must fail

  std::vector<float> got(bits_nan.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = decode(dt, bits_nan[i]);
  // Poisoned output left anywhere, or NaN/Inf, fails here too.
  EXPECT_TRUE(test::close_by_flash_rule(got, ref, plain, dt, "prefill"));
  EXPECT_TRUE(bits_nan == bits_big) << "stale cache contents changed the result";
  const double err = test::max_abs_diff(got, ref);
  const double err_plain = test::max_abs_diff(plain, ref);
  std::printf("[ err ] d%d %s ratio %d sp %d T %d: gpu %.3g plain %.3g\n", D, dtype_name(dt),
              ratio, start_pos, T, err, err_plain);
}

void add_prefill_cases(std::vector<test::OpCase>& cases) {
  for (const SweepParam& param : test::prefill_sweep_params())
    cases.push_back({"attention_prefill", test::prefill_sweep_shape(param),
                     std::get<1>(param),
                     [=](test::OpEnv&) { check_prefill_sweep(param); }, {}});
}
FDPP_REGISTER_OP_CASES(add_prefill_cases);

// Odd head dims go to the generic kernel too; 256 is its upper end (and 2 the lower).
TEST(PrefillGeneric, OtherHeadDims) {
  FDPP_REQUIRE_GPU();
  for (int D : {2, 6, 96, 256}) {
    for (DType dt : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + " " + dtype_name(dt));
      const Problem p = make_problem(dt, 70, 5, 4, 2, D, 77u + D);
      const std::vector<float> ref = cpu_reference(p);
      const std::vector<float> plain = plain_attention(p);
      std::vector<uint16_t> bits;
      ASSERT_NO_FATAL_FAILURE(run_gpu(p, 0xFFFF, &bits));
      std::vector<float> got(bits.size());
      for (size_t i = 0; i < got.size(); ++i) got[i] = decode(dt, bits[i]);
      EXPECT_TRUE(test::close_by_flash_rule(got, ref, plain, dt, "prefill (generic)"));
    }
  }
}

TEST(PrefillArgs, RejectsBadArguments) {
  FDPP_REQUIRE_GPU();
  const KVCacheLayout l{1, 1, 2, 16, 64};
  DevMem dk, dq, dout;
  const size_t cache_bytes = static_cast<size_t>(l.elements_per_layer()) * 2;
  CUDA_OK(cudaMalloc(&dk.p, cache_bytes));
  CUDA_OK(cudaMalloc(&dq.p, 8 * 4 * 64 * 2));
  CUDA_OK(cudaMalloc(&dout.p, 8 * 4 * 64 * 2));
  KVCache cache;
  cache.layout = l;
  cache.dtype = DType::kF16;
  cache.k = Buffer(dk.p, cache_bytes, Device::kCUDA, [](void*) {});
  cache.v = Buffer(dk.p, cache_bytes, Device::kCUDA, [](void*) {});
  auto args = [&](int T, int start_pos) {
    AttentionPrefillArgs a;
    a.q = Tensor(dq.p, DType::kF16, Device::kCUDA, Shape{T, 4, 64});
    a.out = Tensor(dout.p, DType::kF16, Device::kCUDA, Shape{T, 4, 64});
    a.cache = &cache;
    a.start_pos = start_pos;
    a.scale = 0.125f;
    return a;
  };
  EXPECT_TRUE(cuda::run_attention_prefill(args(8, 8), DType::kF16, 1, nullptr).ok());
  EXPECT_TRUE(cuda::run_attention_prefill(args(0, 0), DType::kF16, 1, nullptr).ok());
  EXPECT_EQ(cuda::run_attention_prefill(args(8, 9), DType::kF16, 1, nullptr).code(),
            StatusCode::kOutOfRange);  // start_pos + T > capacity
  EXPECT_EQ(cuda::run_attention_prefill(args(8, 0), DType::kBF16, 1, nullptr).code(),
            StatusCode::kInvalidArgument);  // the cache is f16
  EXPECT_EQ(cuda::run_attention_prefill(args(8, 0), DType::kF32, 1, nullptr).code(),
            StatusCode::kUnsupported);
  AttentionPrefillArgs a = args(8, 0);
  a.slot = 1;
  EXPECT_EQ(cuda::run_attention_prefill(a, DType::kF16, 1, nullptr).code(),
            StatusCode::kOutOfRange);
  a = args(8, 0);
  a.q = Tensor(dq.p, DType::kF16, Device::kCUDA, Shape{8, 3, 64});  // 3 heads over 2 KV heads
  a.out = Tensor(dout.p, DType::kF16, Device::kCUDA, Shape{8, 3, 64});
  EXPECT_EQ(cuda::run_attention_prefill(a, DType::kF16, 1, nullptr).code(),
            StatusCode::kInvalidArgument);
  a = args(8, 0);
  a.out = a.q;
  EXPECT_EQ(cuda::run_attention_prefill(a, DType::kF16, 1, nullptr).code(),
            StatusCode::kInvalidArgument);  // in place
  CUDA_OK(cudaDeviceSynchronize());
}

// Not a pass/fail check: prints TFLOP/s to set beside the torch flash (FA2) and cuDNN
// baselines (causal, 32 heads, d128, batch 1, L 1K/4K/8K: docs/experiments/log.md,
// "attention_prefill_test.cpp: the prefill baselines"). FLOPs counted as 4·L²·D·H / 2, the
// convention of those figures.
TEST(PrefillPerf, CausalThroughput) {
  FDPP_REQUIRE_GPU();
  const int H = 32;
  for (int D : {128, 64}) {
    for (DType dt : {DType::kF16, DType::kBF16}) {
      for (int L : {1024, 4096, 8192}) {
        const KVCacheLayout l{1, 1, H, L, D};
        const size_t n = static_cast<size_t>(L) * H * D;
        std::vector<uint16_t> host(n);
        std::mt19937_64 rng(L + D);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (auto& x : host) x = encode(dt, u(rng));  // never time zeros
        DevMem dk, dv, dq, dout;
        CUDA_OK(cudaMalloc(&dk.p, n * 2));
        CUDA_OK(cudaMalloc(&dv.p, n * 2));
        CUDA_OK(cudaMalloc(&dq.p, n * 2));
        CUDA_OK(cudaMalloc(&dout.p, n * 2));
        for (void* d : {dk.p, dv.p, dq.p})
          CUDA_OK(cudaMemcpy(d, host.data(), n * 2, cudaMemcpyHostToDevice));
        KVCache cache;
        cache.layout = l;
        cache.dtype = dt;
        cache.k = Buffer(dk.p, n * 2, Device::kCUDA, [](void*) {});
        cache.v = Buffer(dv.p, n * 2, Device::kCUDA, [](void*) {});
        AttentionPrefillArgs a;
        a.q = Tensor(dq.p, dt, Device::kCUDA, Shape{L, H, D});
        a.out = Tensor(dout.p, dt, Device::kCUDA, Shape{L, H, D});
        a.cache = &cache;
        a.scale = 1.0f / std::sqrt(static_cast<float>(D));
        int sms = 0;
        CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        for (int i = 0; i < 3; ++i)  // warm-up
          ASSERT_TRUE(cuda::run_attention_prefill(a, dt, sms, nullptr).ok());
        cudaEvent_t e0, e1;
        CUDA_OK(cudaEventCreate(&e0));
        CUDA_OK(cudaEventCreate(&e1));
        std::vector<float> ms;
        for (int r = 0; r < 15; ++r) {
          CUDA_OK(cudaEventRecord(e0));
          ASSERT_TRUE(cuda::run_attention_prefill(a, dt, sms, nullptr).ok());
          CUDA_OK(cudaEventRecord(e1));
          CUDA_OK(cudaEventSynchronize(e1));
          float t = 0;
          CUDA_OK(cudaEventElapsedTime(&t, e0, e1));
          ms.push_back(t);
        }
        CUDA_OK(cudaEventDestroy(e0));
        CUDA_OK(cudaEventDestroy(e1));
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2];
        const double tflops = 2.0 * L * static_cast<double>(L) * D * H / (med * 1e-3) / 1e12;
        const char* base = D != 128 ? "" : L == 1024 ? " (FA2 109, cuDNN 118)"
                                         : L == 4096 ? " (FA2 251, cuDNN 455)"
                                                     : " (FA2 308, cuDNN 561)";
        std::printf("[ perf ] prefill d%d %s H%d L%d: %.3f ms, %.1f TFLOP/s%s\n", D,
                    dtype_name(dt), H, L, med, tflops, base);
      }
    }
  }
}

}  // namespace
}  // namespace fdpp
