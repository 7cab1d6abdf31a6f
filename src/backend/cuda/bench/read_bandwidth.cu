#include "backend/cuda/bench/read_bandwidth.h"

#include "backend/cuda/bench/event_timer.h"
#include "backend/cuda/kernel_status.h"

namespace fdpp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread

// XOR-folds every 16-byte word; the result is stored only if it matches a value
// the data cannot produce, so the loads stay live without a write per thread.
__global__ void __launch_bounds__(kThreads) read_kernel(const uint4* __restrict__ data, size_t n,
                                                        unsigned* sink) {
  const size_t tile = static_cast<size_t>(kThreads) * kUnroll;
  unsigned acc = 0;
  for (size_t base = blockIdx.x * tile; base < n; base += static_cast<size_t>(gridDim.x) * tile) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * kThreads + threadIdx.x;  // coalesced: a warp reads 512 contiguous bytes
      v[u] = i < n ? __ldcs(data + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0xdeadbeefu) *sink = acc;
}

}  // namespace

Result<ReadBandwidth> measure_read_bandwidth(cudaStream_t stream, size_t bytes, int reps) {
  bytes = bytes / sizeof(uint4) * sizeof(uint4);
  if (bytes == 0 || reps < 1) return InvalidArgument("measure_read_bandwidth: empty measurement");
  int device = 0, sms = 0;
  FDPP_KERNEL_CHECK(cudaGetDevice(&device));
  FDPP_KERNEL_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));

  void* buf = nullptr;
  unsigned* sink = nullptr;
  ReadBandwidth r;
  r.bytes = bytes;
  r.reps = reps;
  // Frees everything on every path out.
  auto run = [&]() -> Status {
    FDPP_KERNEL_CHECK(cudaMalloc(&buf, bytes));
    FDPP_KERNEL_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    FDPP_KERNEL_CHECK(cudaMemsetAsync(buf, 0x5a, bytes, stream));  // not zeros: never time zeros
    const size_t n = bytes / sizeof(uint4);
    const int blocks = sms * 8;  // 8 resident CTAs of 256 threads per SM: full occupancy
    auto pass = [&]() -> Status {
      read_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(buf), n, sink);
      FDPP_KERNEL_CHECK_LAUNCH();
      return Status::Ok();
    };
    for (int i = 0; i < 2; ++i) FDPP_RETURN_IF_ERROR(pass());  // warm-up
    FDPP_ASSIGN_OR_RETURN(const TimedRuns t, time_runs(stream, reps, 1, pass));
    r.gbs = bytes / (t.median_us * 1e-6) / 1e9;
    r.best_gbs = bytes / (t.min_us * 1e-6) / 1e9;
    return Status::Ok();
  };
  Status s = run();
  if (buf) cudaFree(buf);
  if (sink) cudaFree(sink);
  if (!s.ok()) return s;
  return r;
}

}  // namespace fdpp::cuda
