// The CUDA backend itself: creation (a device that does not exist, an activation dtype it
// does not run) and allocation failure, which names the bytes and leaves no error behind.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/gpu_test_util.h"

namespace fdpp {
namespace {

using test::DeviceTensor;

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

}  // namespace
}  // namespace fdpp
