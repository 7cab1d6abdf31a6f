// What a backend is asked when a GEMM dispatch table is tuned (tuning/gemm_tune.h): time
// each implementation of y[m, n] = x[m, k] · W[n, k]ᵀ at the given shapes and M, and hand
// back one GemmTiming per run. Part of the op contract rather than of tuning so that the
// backend that owns the kernels times them (Backend::time_gemms) while the tuner, which
// turns timings into a table, stays CUDA-free and above the backends.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "dispatch/gemm_plan.h"

namespace fdpp {

struct GemmTimingShape {
  std::string name;  // "qkv", "o", ...
  int64_t n = 0;
  int64_t k = 0;
  // The model's prologue on x before this GEMM (model/gemm_shapes.h); timed with the
  // GEMV where the engine fuses it.
  LinearPrologue::Kind prologue = LinearPrologue::Kind::kNone;
};

// Every implementation at every (shape, M) an implementation can run; the tuner's
// choices of what to sweep (tuning/gemm_tune.h: GemmTuneOptions says why each).
struct GemmTimingRequest {
  std::vector<GemmTimingShape> shapes;
  std::vector<int> ms;
  int reps = 10;        // timed graph replays per measurement
  int rounds = 5;       // the replays spread over rounds that visit every candidate of one M
  int min_calls = 8;    // calls per graph
  int min_copies = 2;   // weight copies rotated through
  int64_t rotate_bytes = 0;  // bytes the copies span; 0: the backend's own default
  std::vector<int> splits;       // split-K counts for GEMV and flat besides the planner's
  std::vector<int> gemv_splits;  // split-K counts for the GEMV only
  int cublas_algos = 1;          // cuBLASLt heuristic answers timed per (shape, M)
};

// One timed run of one implementation.
struct GemmTiming {
  std::string shape;  // "qkv"; names the table's shape (the first one seen wins)
  int64_t n = 0, k = 0;
  int m = 0;
  ImplChoice choice;     // as run: split-K resolved
  bool planned = true;   // the split the planner picks for this implementation
  double us = 0;         // per call; <= 0 or non-finite: not a measurement, ignored
  int timed_m = 0;       // the M the kernel ran at (a flat GEMM's timing serves its n8 tile)
};

// GemmTimingProgress (backend/backend.h): called after each timing (a progress bar).

}  // namespace fdpp
