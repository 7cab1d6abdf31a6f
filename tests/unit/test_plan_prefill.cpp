// plan_prefill (src/dispatch/plan_prefill.h): which prefill kernel runs and the checks of
// what no kernel takes. Every expected plan is what b3ff36d's run_attention_prefill chose
// (the tensor-core kernel for head_dim 64/128 with 16-byte aligned q, out, k and v, else the
// generic one; the requested policy on either), before the choice moved into plan_prefill.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dispatch/plan_prefill.h"

namespace fdpp {
namespace {

constexpr SoftmaxPolicy kSync = SoftmaxPolicy::kSynchronized;
constexpr SoftmaxPolicy kUnified = SoftmaxPolicy::kUnifiedMax;
constexpr PrefillKernel kMma = PrefillKernel::kTensorCore;
constexpr PrefillKernel kGeneric = PrefillKernel::kGeneric;

struct Row {
  PrefillShape shape;
  PrefillPlan want;
};

TEST(PlanPrefill, TableMatchesTheChoicesOfB3ff36d) {
  const std::vector<Row> rows = {
      // Llama-2-7B, GQA 32/8, OPT/ChatGLM2-like head_dim 64, both dtypes and policies.
      {{32, 32, 128, DType::kF16, true, kSync}, {kMma, 1, kSync}},
      {{32, 32, 128, DType::kF16, true, kUnified}, {kMma, 1, kUnified}},
      {{32, 8, 128, DType::kBF16, true, kSync}, {kMma, 4, kSync}},
      {{32, 8, 128, DType::kBF16, true, kUnified}, {kMma, 4, kUnified}},
      {{32, 2, 64, DType::kF16, true, kSync}, {kMma, 16, kSync}},
      {{12, 12, 64, DType::kBF16, true, kUnified}, {kMma, 1, kUnified}},
      // Unaligned pointers: the generic kernel, both policies.
      {{32, 32, 128, DType::kF16, false, kSync}, {kGeneric, 1, kSync}},
      {{32, 8, 64, DType::kF16, false, kUnified}, {kGeneric, 4, kUnified}},
      // No tensor-core instantiation: stories260K's head_dim 8, 96, 256, 2.
      {{8, 4, 8, DType::kF16, true, kSync}, {kGeneric, 2, kSync}},
      {{32, 32, 96, DType::kF16, true, kUnified}, {kGeneric, 1, kUnified}},
      {{16, 16, 256, DType::kBF16, true, kSync}, {kGeneric, 1, kSync}},
      {{16, 16, 256, DType::kBF16, true, kUnified}, {kGeneric, 1, kUnified}},
      {{1, 1, 2, DType::kF16, true, kSync}, {kGeneric, 1, kSync}},
      {{65535, 1, 64, DType::kF16, true, kSync}, {kMma, 65535, kSync}},
  };
  for (const Row& r : rows) {
    const PrefillShape& s = r.shape;
    const std::string what = std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) +
                             " D" + std::to_string(s.head_dim) +
                             (s.aligned16 ? "" : " unaligned");
    Result<PrefillPlan> got = plan_prefill(r.shape);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().message();
    EXPECT_STREQ(prefill_kernel_name(got->kernel), prefill_kernel_name(r.want.kernel)) << what;
    EXPECT_EQ(got->group, r.want.group) << what;
    EXPECT_EQ(got->softmax, r.want.softmax) << what;
    EXPECT_TRUE(*got == r.want) << what;
  }
}

TEST(PlanPrefill, RefusesWhatNoKernelTakes) {
  const PrefillShape ok{32, 8, 128, DType::kF16, true, kSync};
  EXPECT_TRUE(check_prefill_shape(ok).ok());
  const auto code = [](PrefillShape s) { return plan_prefill(s).status().code(); };
  PrefillShape s = ok;
  s.head_dim = 7;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s.head_dim = 258;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s.head_dim = 0;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s = ok;
  s.dtype = DType::kF32;
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s = ok;
  s.n_heads = 65536, s.n_kv_heads = 1;  // gridDim.y
  EXPECT_EQ(code(s), StatusCode::kUnsupported);
  s = ok;
  s.n_kv_heads = 6;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s.n_kv_heads = 0;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = ok;
  s.n_heads = 0;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  // check_prefill_shape is plan_prefill's check.
  s = ok;
  s.head_dim = 7;
  EXPECT_EQ(check_prefill_shape(s).code(), StatusCode::kUnsupported);
}

TEST(PlanPrefill, KernelNames) {
  EXPECT_STREQ(prefill_kernel_name(PrefillKernel::kTensorCore), "mma");
  EXPECT_STREQ(prefill_kernel_name(PrefillKernel::kGeneric), "generic");
}

}  // namespace
}  // namespace fdpp
