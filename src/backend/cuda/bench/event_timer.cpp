#include "backend/cuda/bench/event_timer.h"

#include <algorithm>
#include <vector>

#include "backend/cuda/cuda_check.h"

namespace fdpp::cuda {
namespace {

// CUDA events released on every path out.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

}  // namespace

Result<TimedRuns> time_runs(cudaStream_t stream, int reps, int calls_per_run,
                            const std::function<Status()>& run) {
  if (reps < 1 || calls_per_run < 1)
    return InvalidArgument("time_runs: reps and calls per run must be at least 1");
  EventPair ev;
  FDPP_CUDA_CHECK(cudaEventCreate(&ev.start));
  FDPP_CUDA_CHECK(cudaEventCreate(&ev.stop));
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    FDPP_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    FDPP_RETURN_IF_ERROR(run());
    FDPP_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    FDPP_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    FDPP_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    us.push_back(1e3 * ms / calls_per_run);
  }
  std::sort(us.begin(), us.end());
  return TimedRuns{us[us.size() / 2], us.front(), us};
}

}  // namespace fdpp::cuda
