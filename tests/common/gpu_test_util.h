// Helpers for the GPU tests (label "gpu"): skipping without a GPU, random
// inputs rounded to the kernel's dtype, upload/download with f16/bf16
// conversion, and flash-attention's tolerance rule.
//
// Every GPU test starts with FDPP_REQUIRE_GPU(): without a driver or a device
// it reports SKIPPED (ctest counts it as skipped, never passed).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm/gemm_dispatch.h"
#include "core/dtype.h"
#include "core/half.h"
#include "core/tensor.h"
#include "fdpp/status.h"

#define FDPP_REQUIRE_GPU()                                                               \
  do {                                                                                   \
    if (!::fdpp::cuda::cuda_device_available())                                          \
      GTEST_SKIP() << "no usable CUDA device (no driver, no GPU, or compute capability " \
                      "below 8.0)";                                                      \
  } while (0)

namespace fdpp {
// gtest prints a DType parameter by name ("f16") instead of its bytes.
inline void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }
}  // namespace fdpp

namespace fdpp::test {

// Greedy decoding is compared with a reference only up to a step whose reference top-2
// logit margin lies within the dtype's reach: there a tie may flip legitimately (bf16's
// logits on stories260K carry ~6% relative L2 error, and the reference has a 0.8% margin at
// its 16th generated token). `logits` holds (rows, vocab) reference rows, row r predicting
// token r + 1; returns how many tokens from position `first` on are decided, i.e. the
// rows first - 1, first, ... whose margin is at least `rel_margin` × |top-1 logit|.
inline size_t decided_greedy_tokens(const std::vector<float>& logits, int vocab, size_t first,
                                    double rel_margin) {
  size_t n = 0;
  for (size_t r = first - 1; (r + 1) * vocab <= logits.size(); ++r, ++n) {
    std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
    if (row[0] - row[1] < rel_margin * std::abs(row[0])) break;
  }
  return n;
}
// The margin each dtype needs: fp16 follows the reference over every shipped step.
inline double greedy_rel_margin(const std::string& dtype) { return dtype == "bf16" ? 0.02 : 0.0; }

// Logits (rows, V): the worst over rows of ‖a − b‖ / ‖b‖ along the vocabulary.
inline double worst_row_rel_l2(const std::vector<float>& a, const std::vector<float>& b, int V) {
  double worst = 0;
  for (size_t r = 0; r * V < b.size(); ++r) {
    double num = 0, den = 0;
    for (int v = 0; v < V; ++v) {
      const double d = a[r * V + v] - b[r * V + v];
      num += d * d;
      den += double(b[r * V + v]) * b[r * V + v];
    }
    worst = std::max(worst, std::sqrt(num / den));
  }
  return worst;
}

// The odd-size sweep both prefill suites run (synchronized and unified): head_dim 64, 128
// and 8 (the generic kernel), f16 and bf16, GQA ratio, start position, new tokens.
using PrefillSweepParam = std::tuple<int, DType, int, int, int>;  // D, dtype, GQA, start_pos, T
inline std::vector<PrefillSweepParam> prefill_sweep_params() {
  std::vector<PrefillSweepParam> v;
  for (int D : {64, 128, 8})
    for (DType dt : {DType::kF16, DType::kBF16})
      for (int ratio : {1, 2, 4, 8})
        for (int start_pos : {0, 37})
          for (int T : {1, 2, 63, 65, 97, 1025}) v.emplace_back(D, dt, ratio, start_pos, T);
  return v;
}
// The case's name without its dtype (the harness appends that): "d64_gqa2_sp37_T65".
inline std::string prefill_sweep_shape(const PrefillSweepParam& p) {
  const auto [D, dt, ratio, start_pos, T] = p;
  char name[64];  // (snprintf: GCC 12 warns falsely (-Wrestrict) on a chain of string +)
  std::snprintf(name, sizeof name, "d%d_gqa%d_sp%d_T%d", D, ratio, start_pos, T);
  return name;
}

inline Status status_of(const Status& s) { return s; }
template <class T>
Status status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace fdpp::test

// ASSERT that a Status or Result is OK, printing its message otherwise.
#define FDPP_GPU_ASSERT_OK(expr)                                       \
  do {                                                                 \
    const ::fdpp::Status fdpp_st_ = ::fdpp::test::status_of((expr));   \
    ASSERT_TRUE(fdpp_st_.ok()) << #expr << ": " << fdpp_st_.to_string(); \
  } while (0)
// `FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto x, make_x());` in a void test body.
#define FDPP_GPU_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  FDPP_GPU_ASSERT_OK_AND_ASSIGN_IMPL_(FDPP_CONCAT_(fdpp_gpu_r_, __LINE__), lhs, expr)
#define FDPP_GPU_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)            \
  auto tmp = (expr);                                                   \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().to_string(); \
  lhs = std::move(tmp).value()

namespace fdpp::test {

// ---- numbers ------------------------------------------------------------------

// x as the nearest value of dtype (round to nearest even, as the GPU converts).
inline float round_to(DType dtype, float x) {
  switch (dtype) {
    case DType::kF16: return f16_to_f32(f32_to_f16(x));
    case DType::kBF16: return bf16_to_f32(f32_to_bf16(x));
    default: return x;
  }
}
inline std::vector<float> round_all(DType dtype, std::vector<float> v) {
  for (float& x : v) x = round_to(dtype, x);
  return v;
}

// F.linear(x, w, b) in half precision, the error baseline of the GEMM tests: y (+)= x · wᵀ
// (+ b) with an fp32 accumulator that starts at the bias (cuBLAS's bias epilogue; empty b:
// none), plus y0 when accumulating, and one rounding of the result to dt.
inline std::vector<float> plain_linear(const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& b, const std::vector<float>& y0,
                                       int64_t M, int64_t N, int64_t K, bool accumulate,
                                       DType dt) {
  std::vector<float> y(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = b.empty() ? 0.f : b[n];
      for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * w[n * K + k];
      y[m * N + n] = round_to(dt, accumulate ? y0[m * N + n] + acc : acc);
    }
  return y;
}

// Relative spacing of dtype at 1.0 (2^-10 for f16, 2^-7 for bf16, 2^-23 for f32).
inline double dtype_epsilon(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 1.0 / 1024.0;
    case DType::kBF16: return 1.0 / 128.0;
    default: return 1.0 / 8388608.0;
  }
}

// n values uniform in [lo, hi), already rounded to dtype, from a fixed seed.
inline std::vector<float> random_uniform(size_t n, float lo, float hi, uint32_t seed,
                                         DType dtype = DType::kF32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = round_to(dtype, dist(rng));
  return v;
}
// n values from N(0, stddev²), rounded to dtype.
inline std::vector<float> random_normal(size_t n, float stddev, uint32_t seed,
                                        DType dtype = DType::kF32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = round_to(dtype, dist(rng));
  return v;
}

// ---- host tensors ---------------------------------------------------------------

// A view of host memory (no ownership) as the CPU backend's f32/i32 tensors.
inline Tensor host_view(std::vector<float>& v, Shape s) {
  return Tensor(v.data(), DType::kF32, Device::kCPU, s);
}
inline Tensor host_view(std::vector<int32_t>& v, Shape s) {
  return Tensor(v.data(), DType::kI32, Device::kCPU, s);
}

// ---- device tensors ---------------------------------------------------------------

// A device buffer and a tensor view of it.
struct DeviceTensor {
  Buffer buffer;
  Tensor t;
};

// Uninitialised device memory for (dtype, shape), then filled with 0xFF bytes:
// NaN in f16/bf16/f32 and -1 in i32, so an element a kernel fails to write is seen.
inline Result<DeviceTensor> alloc_poisoned(cuda::CudaBackend& be, DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  FDPP_ASSIGN_OR_RETURN(Buffer b, be.alloc(bytes));
  DeviceTensor d{std::move(b), {}};
  d.t = Tensor(d.buffer.data(), dtype, Device::kCUDA, shape);
  FDPP_RETURN_IF_ERROR(be.fill_bytes(d.t, 0xFF));
  return d;
}

// Host floats → the bytes of dtype (f16/bf16 rounded to nearest even, f32 as is).
inline std::vector<uint8_t> encode(const std::vector<float>& v, DType dtype) {
  std::vector<uint8_t> bytes(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF16 || dtype == DType::kBF16) {
      const uint16_t h = dtype == DType::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &v[i], 4);
    }
  }
  return bytes;
}

// Uploads host values as dtype into a new device buffer of `shape` (waits for the copy).
inline Result<DeviceTensor> upload(cuda::CudaBackend& be, const std::vector<float>& host,
                                   DType dtype, Shape shape) {
  if (static_cast<int64_t>(host.size()) != shape.numel())
    return InvalidArgument("upload: " + std::to_string(host.size()) + " values for shape " +
                           shape.to_string());
  FDPP_ASSIGN_OR_RETURN(DeviceTensor d, alloc_poisoned(be, dtype, shape));
  const std::vector<uint8_t> bytes = encode(host, dtype);
  FDPP_RETURN_IF_ERROR(be.copy_from_host(bytes.data(), d.t));
  FDPP_RETURN_IF_ERROR(be.synchronize());
  return d;
}
inline Result<DeviceTensor> upload_i32(cuda::CudaBackend& be, const std::vector<int32_t>& host,
                                       Shape shape) {
  if (static_cast<int64_t>(host.size()) != shape.numel())
    return InvalidArgument("upload_i32: size mismatch for shape " + shape.to_string());
  FDPP_ASSIGN_OR_RETURN(DeviceTensor d, alloc_poisoned(be, DType::kI32, shape));
  FDPP_RETURN_IF_ERROR(be.copy_from_host(host.data(), d.t));
  FDPP_RETURN_IF_ERROR(be.synchronize());
  return d;
}

// A device tensor's values as floats on the host (f16/bf16 widened exactly).
inline Result<std::vector<float>> download(cuda::CudaBackend& be, const Tensor& t) {
  std::vector<uint8_t> bytes(t.nbytes());
  FDPP_RETURN_IF_ERROR(be.copy_to_host(t, bytes.data()));
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::kF16 || t.dtype == DType::kBF16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = t.dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
    } else if (t.dtype == DType::kF32) {
      std::memcpy(&v[i], bytes.data() + 4 * i, 4);
    } else {
      return InvalidArgument("download: " + t.describe() + " is not a float tensor");
    }
  }
  return v;
}
inline Result<std::vector<int32_t>> download_i32(cuda::CudaBackend& be, const Tensor& t) {
  if (t.dtype != DType::kI32) return InvalidArgument("download_i32: " + t.describe());
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  FDPP_RETURN_IF_ERROR(be.copy_to_host(t, v.data()));
  return v;
}

// ---- comparisons ------------------------------------------------------------------

// Every element finite: an unwritten (poisoned) element is NaN, so this also checks coverage.
inline ::testing::AssertionResult all_finite(const std::vector<float>& v, const std::string& what) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      return ::testing::AssertionFailure() << what << ": element " << i << " of " << v.size()
                                           << " is " << v[i] << " (unwritten or overflowed)";
  return ::testing::AssertionSuccess();
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b,
                           size_t* where = nullptr) {
  double m = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (d > m || std::isnan(d)) {
      m = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
      if (where) *where = i;
    }
  }
  return m;
}
inline double max_abs(const std::vector<float>& a) {
  double m = 0.0;
  for (float x : a) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// flash-attention's rule: the kernel's error against the fp32 reference must be
// at most twice the error of a plain same-precision implementation (`plain`,
// which rounds where a naive fp16/bf16 implementation rounds), plus a floor:
// half an ulp of dtype at the largest reference value, the error of merely
// storing a correct result in dtype (a tensor of a handful of elements can
// round luckily in the plain implementation), and abs_floor.
// Also fails on any non-finite output and on a size mismatch.
inline ::testing::AssertionResult close_by_flash_rule(const std::vector<float>& out,
                                                      const std::vector<float>& ref,
                                                      const std::vector<float>& plain,
                                                      DType dtype, const std::string& what,
                                                      double abs_floor = 1e-6) {
  if (out.size() != ref.size() || plain.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": sizes " << out.size() << " / "
                                         << ref.size() << " / " << plain.size();
  if (out.empty()) return ::testing::AssertionFailure() << what << ": nothing to compare";
  if (auto r = all_finite(out, what); !r) return r;
  size_t worst = 0;
  const double err = max_abs_diff(out, ref, &worst);
  const double plain_err = max_abs_diff(plain, ref);
  const double tol = 2.0 * plain_err + 0.5 * dtype_epsilon(dtype) * max_abs(ref) + abs_floor;
  if (err <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": max |out - ref| = " << err << " at " << worst << " (out " << out[worst]
         << ", ref " << ref[worst] << ") > tolerance " << tol << " (plain " << dtype_name(dtype)
         << " error " << plain_err << ", max |ref| " << max_abs(ref) << ")";
}

// ---- fixtures -------------------------------------------------------------------

// A test over f16 and bf16 on a CUDA backend whose activations are the parameter's dtype
// (its GEMM policy is reset to auto after each test). Instantiate as below.
class CudaBackendTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    FDPP_REQUIRE_GPU();
    cuda::CudaBackendOptions o;
    o.activation_dtype = GetParam();
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(gpu_, cuda::make_cuda_backend(o));
  }
  void TearDown() override {
    if (gpu_) gpu_->gemm_dispatcher().set_policy(GemmPolicy::kAuto);
  }
  DType dt() const { return GetParam(); }
  cuda::GemmDispatcher& dispatcher() { return gpu_->gemm_dispatcher(); }

  std::unique_ptr<cuda::CudaBackend> gpu_;
};

// An op test over f16 and bf16: the CPU reference backend and a CUDA backend whose
// activations are the parameter's dtype. Instantiate with
//   INSTANTIATE_TEST_SUITE_P(Dtypes, X, ::testing::Values(DType::kF16, DType::kBF16),
//                            test::dtype_param_name);
class CpuAndCudaBackends : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    FDPP_REQUIRE_GPU();
    cpu_ = make_cpu_backend();
    cuda::CudaBackendOptions o;
    o.activation_dtype = GetParam();
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(gpu_, cuda::make_cuda_backend(o));
  }
  DType dt() const { return GetParam(); }
  float r(float x) const { return round_to(dt(), x); }

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<cuda::CudaBackend> gpu_;
};

// gtest names the instances by dtype ("f16") instead of 0, 1.
inline std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return dtype_name(info.param);
}

}  // namespace fdpp::test
