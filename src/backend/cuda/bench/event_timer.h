// The timing loop of the kernel benchmarks: `reps` runs of a callable, each between two
// CUDA events on one stream; the median and the fastest run, per call inside a run.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "fdpp/status.h"

namespace fdpp::cuda {

struct TimedRuns {
  double median_us = 0;  // per call: run time / calls_per_run
  double min_us = 0;
  std::vector<double> us;  // every run, per call, ascending (to pool runs timed apart)
};

// `run` enqueues one run on `stream` (a graph replay, a launch); warm-up is the caller's.
Result<TimedRuns> time_runs(cudaStream_t stream, int reps, int calls_per_run,
                            const std::function<Status()>& run);

}  // namespace fdpp::cuda
