// The table-driven op harness (gpu_test_ops), in the style of llama.cpp's test-backend-ops:
// every op case (op × shape × dtype × variant) runs on the CUDA backend and on the CPU
// reference with the same random inputs (fixed seeds, rounded to the case's dtype), with
// the CUDA outputs poisoned first (0xFF bytes: NaN, so every element must be written),
// and is compared with the op's own error rule (close_by_flash_rule, or exact equality
// where the op is a copy or a single rounding).
//
// An op file adds its cases to the registry at static initialisation:
//   void add_rmsnorm_cases(std::vector<OpCase>& cases) { cases.push_back({...}); }
//   FDPP_REGISTER_OP_CASES(add_rmsnorm_cases);
// gtest runs each case as OpVsReference/Case/<op>_<shape>_<dtype>; `gpu_test_ops --perf`
// times the cases that give a `perf` launch (op_harness.cpp).
//
// A case's check body is written as the body of a CpuAndCudaBackends test (cpu_, gpu_,
// dt(), r()): FDPP_OP_ENV(env) declares those names from the OpEnv, so the bodies moved
// here from the per-issue test files read exactly as they did there.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "common/gpu_test_util.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp::test {

// The two backends one case runs on: the CPU reference and a CUDA backend whose
// activations are the case's dtype (fresh per case, as the old per-test fixtures were).
struct OpEnv {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<cuda::CudaBackend> gpu;
  DType dtype = DType::kF16;
};

// What --perf times: `launch` enqueues the op once on the backend's stream, on device
// inputs that `keep` owns; `bytes` (moved to and from memory) and `flops` give the rate.
struct PerfLaunch {
  std::vector<DeviceTensor> keep;
  std::function<Status()> launch;
  double bytes = 0;
  double flops = 0;
  // Moves device tensors into `keep` (DeviceTensor is move-only: no initializer list).
  template <class... T>
  void hold(T&&... t) {
    (keep.push_back(std::forward<T>(t)), ...);
  }
};

struct OpCase {
  std::string op;     // "rmsnorm"; --perf --filter matches it
  std::string shape;  // "H13_T3": the shape and variant, as gtest-safe characters
  DType dtype = DType::kF16;
  std::function<void(OpEnv&)> check;           // gtest assertions
  std::function<Result<PerfLaunch>(OpEnv&)> perf;  // empty: not timed
  std::string name() const { return op + "_" + shape + "_" + dtype_name(dtype); }
};

// Every registered case, in registration order.
std::vector<OpCase>& op_registry();

struct OpCaseRegistrar {
  explicit OpCaseRegistrar(void (*add)(std::vector<OpCase>&)) { add(op_registry()); }
};
#define FDPP_REGISTER_OP_CASES(fn) \
  [[maybe_unused]] const ::fdpp::test::OpCaseRegistrar fdpp_op_cases_##fn(fn)

// A case's shape name from (label, value) pairs: {{"H", 13}, {"T", 3}} -> "H13_T3".
inline std::string shape_name(std::initializer_list<std::pair<const char*, long long>> dims) {
  std::string s;
  for (const auto& [label, value] : dims) {
    if (!s.empty()) s += '_';
    s += label;
    s += std::to_string(value);
  }
  return s;
}

// The two dtypes every op is tested in (each with its own backend, as before).
inline const std::vector<DType>& op_dtypes() {
  static const std::vector<DType> d = {DType::kF16, DType::kBF16};
  return d;
}

}  // namespace fdpp::test

// In a case body: the fixture names CpuAndCudaBackends gave the test bodies.
#define FDPP_OP_ENV(env)                                                         \
  [[maybe_unused]] std::unique_ptr<::fdpp::Backend>& cpu_ = (env).cpu;           \
  [[maybe_unused]] std::unique_ptr<::fdpp::cuda::CudaBackend>& gpu_ = (env).gpu; \
  [[maybe_unused]] const auto dt = [d = (env).dtype] { return d; };              \
  [[maybe_unused]] const auto r = [d = (env).dtype](float x) {                   \
    return ::fdpp::test::round_to(d, x);                                         \
  }
