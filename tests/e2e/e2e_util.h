// The end-to-end suite's parameter: the target an Engine runs on (device, activation dtype,
// softmax policy). Every e2e TEST_P takes one; the suite builds into two binaries from the
// same sources: test_e2e (label cpu, run in CI) instantiates the CPU targets, gpu_test_e2e
// (label gpu, FDPP_E2E_CUDA=1) the CUDA ones, which report SKIPPED without a usable GPU.
// A suite whose checks hold on one device only lists targets of that device; in the other
// binary it has no instance (GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST, which each
// fixture declares, says that is intended). Files named *_cuda_test.cpp hold checks that
// only mean something on the GPU (graphs, PDL, GEMM policies, fp16/bf16 precision) and
// build into gpu_test_e2e only.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "fdpp/engine.h"

#ifndef FDPP_E2E_CUDA
#define FDPP_E2E_CUDA 0
#endif
#if FDPP_E2E_CUDA
#include "common/gpu_test_util.h"
#endif

namespace fdpp::test {

struct E2eTarget {
  std::string device = "cpu";  // EngineOptions::device
  std::string dtype;           // "" (the device's default: fp32 on the CPU), "fp16", "bf16"
  std::string softmax;         // "" (the default), "unified"
  bool cuda() const { return device == "cuda"; }
  std::string name() const {
    std::string n = device;
    if (!dtype.empty()) n += "_" + dtype;
    if (!softmax.empty()) n += "_" + softmax;
    return n;
  }
  // The target's fields set on o (the rest of o as the test chose it).
  EngineOptions apply(EngineOptions o) const {
    o.device = device;
    if (!dtype.empty()) o.dtype = dtype;
    if (!softmax.empty()) o.softmax = softmax;
    return o;
  }
};
inline void PrintTo(const E2eTarget& t, std::ostream* os) { *os << t.name(); }

inline const E2eTarget kCpu{"cpu", "", ""};
inline const E2eTarget kCudaFp16{"cuda", "fp16", ""};
inline const E2eTarget kCudaBf16{"cuda", "bf16", ""};
inline const E2eTarget kCudaFp16Unified{"cuda", "fp16", "unified"};
inline const E2eTarget kCudaBf16Unified{"cuda", "bf16", "unified"};

// Of `targets`, those this binary runs: the CPU ones in test_e2e, the CUDA ones in
// gpu_test_e2e.
inline std::vector<E2eTarget> e2e_targets(std::initializer_list<E2eTarget> targets) {
  std::vector<E2eTarget> out;
  for (const E2eTarget& t : targets)
    if (t.cuda() == bool(FDPP_E2E_CUDA)) out.push_back(t);
  return out;
}

inline std::string e2e_target_name(const ::testing::TestParamInfo<E2eTarget>& info) {
  return info.param.name();
}

}  // namespace fdpp::test

// First line of every e2e test on a target: a CUDA target without a usable GPU is SKIPPED.
#if FDPP_E2E_CUDA
#define FDPP_E2E_REQUIRE_TARGET(target) \
  do {                                  \
    if ((target).cuda()) FDPP_REQUIRE_GPU(); \
  } while (0)
#else
#define FDPP_E2E_REQUIRE_TARGET(target) \
  do {                                  \
  } while (0)
#endif
