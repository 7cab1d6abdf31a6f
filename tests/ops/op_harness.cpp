// The harness's gtest instance over the registry, and gpu_test_ops's main: without --perf
// it is gtest's; with it, it times every registered case that gives a launch.
//
//   gpu_test_ops [gtest flags]                 every case vs the CPU reference, plus the
//                                              ops' own TESTs (tests/ops/*_test.cpp)
//   gpu_test_ops --perf [--filter OP] [--reps N]
//       per case: the median of N runs (CUDA events on the backend's stream, after a
//       warm-up), GB/s and its share of the device's streaming-read bandwidth (measured
//       first, the way fdpp bench measures it: bench/read_bandwidth.h), and TFLOP/s
//       where the case counts flops. The roofline is the read bandwidth because the
//       decode-time ops are bandwidth-bound; a GEMM case's TFLOP/s is printed beside it.
#include "ops/op_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/bench/event_timer.h"
#include "backend/cuda/bench/read_bandwidth.h"

namespace fdpp::test {

std::vector<OpCase>& op_registry() {
  static std::vector<OpCase> cases;
  return cases;
}

namespace {

Result<OpEnv> make_env(DType dtype) {
  OpEnv env;
  env.dtype = dtype;
  env.cpu = make_cpu_backend();
  cuda::CudaBackendOptions o;
  o.activation_dtype = dtype;
  FDPP_ASSIGN_OR_RETURN(env.gpu, cuda::make_cuda_backend(o));
  return env;
}

// Pointers into the registry, which is complete before gtest expands the instances
// (InitGoogleTest, after static initialisation).
std::vector<const OpCase*> registered_cases() {
  std::vector<const OpCase*> p;
  for (const OpCase& c : op_registry()) p.push_back(&c);
  return p;
}

class OpVsReference : public ::testing::TestWithParam<const OpCase*> {
 protected:
  void SetUp() override {
    FDPP_REQUIRE_GPU();
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(env_, make_env(GetParam()->dtype));
  }
  OpEnv env_;
};

TEST_P(OpVsReference, Case) {
  SCOPED_TRACE(GetParam()->name());
  GetParam()->check(env_);
}

INSTANTIATE_TEST_SUITE_P(Table, OpVsReference, ::testing::ValuesIn(registered_cases()),
                         [](const ::testing::TestParamInfo<const OpCase*>& info) {
                           return info.param->name();
                         });

int run_perf(const std::string& filter, int reps) {
  if (!cuda::cuda_device_available()) {
    std::fprintf(stderr, "--perf: no usable CUDA device\n");
    return 1;
  }
  double roof_gbs = 0;
  for (DType dtype : op_dtypes()) {
    Result<OpEnv> env = make_env(dtype);
    if (!env.ok()) {
      std::fprintf(stderr, "--perf: %s\n", env.status().to_string().c_str());
      return 1;
    }
    if (roof_gbs == 0) {
      Result<cuda::ReadBandwidth> bw = cuda::measure_read_bandwidth(env->gpu->stream());
      if (!bw.ok()) {
        std::fprintf(stderr, "--perf: read bandwidth: %s\n", bw.status().to_string().c_str());
        return 1;
      }
      roof_gbs = bw->gbs;
      std::printf("read bandwidth (roofline): %.0f GB/s\n", roof_gbs);
      std::printf("%-46s %10s %9s %7s %9s\n", "case", "median us", "GB/s", "% roof", "TFLOP/s");
    }
    for (const OpCase& c : op_registry()) {
      if (c.dtype != dtype || !c.perf) continue;
      if (!filter.empty() && c.op.find(filter) == std::string::npos) continue;
      Result<PerfLaunch> p = c.perf(*env);
      if (!p.ok()) {
        std::printf("%-46s %s\n", c.name().c_str(), p.status().to_string().c_str());
        continue;
      }
      Status warm = Status::Ok();
      for (int i = 0; i < 3 && warm.ok(); ++i) warm = p->launch();  // warm-up: L2, clocks, JIT
      if (warm.ok()) warm = env->gpu->synchronize();
      if (!warm.ok()) {
        std::printf("%-46s %s\n", c.name().c_str(), warm.to_string().c_str());
        continue;
      }
      Result<cuda::TimedRuns> t = cuda::time_runs(env->gpu->stream(), reps, 1, p->launch);
      if (!t.ok()) {
        std::printf("%-46s %s\n", c.name().c_str(), t.status().to_string().c_str());
        continue;
      }
      const double us = t->median_us;
      const double gbs = us > 0 ? p->bytes / (us * 1e3) : 0;
      std::printf("%-46s %10.2f %9.1f %6.1f%%", c.name().c_str(), us, gbs, 100 * gbs / roof_gbs);
      if (p->flops > 0) std::printf(" %9.2f", us > 0 ? p->flops / (us * 1e6) : 0);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace fdpp::test

int main(int argc, char** argv) {
  bool perf = false;
  std::string filter;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--perf") == 0) {
      perf = true;
    } else if (perf && std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
      filter = argv[++i];
    } else if (perf && std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    }
  }
  if (perf) return fdpp::test::run_perf(filter, reps);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
