// Measuring a GEMM dispatch table on this GPU (design.md, Technique 3): `fdpp tune` and
// the engine's --autotune. For each distinct [N, K], M is swept densely where the three
// implementations trade places (1..64: GEMV to flat to cuBLASLt) and sparsely above
// (80..512, where only cuBLASLt runs); ImplA, every ImplB configuration and cuBLASLt are
// timed by the backend (Backend::time_gemms; on CUDA gemm_bench's graph replays, L2
// defeated, the GEMV at batch 1 with the norm or SiLU-gate prologue the engine fuses into
// it) and the fastest per M kept (tuning/gemm_table_derive.h).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/gemm_timing.h"
#include "dispatch/gemm_table.h"
#include "fdpp/status.h"
#include "model/config.h"

namespace fdpp {

struct GemmTuneOptions {
  int max_m = 512;
  // Fewer replays than bench-gemm's 30: a table needs the order of the implementations,
  // not a third significant digit, and a model's sweep stays within seconds.
  int reps = 10;
  // The 10 replays in 5 rounds of 2 over every candidate of one M (gemm_bench.h).
  int rounds = 5;
  int min_calls = 8;
  int min_copies = 2;
  // Bytes the rotated weight copies span; 0: the backend's default (on CUDA 4 × the GPU's
  // L2, at least 64 MB, so a copy has left the L2 long before it comes round again).
  int64_t rotate_bytes = 0;
  // Split-K counts timed for ImplA / ImplB besides the planner's own (bench-gemm's
  // --splits): the split is part of a table entry, and on the H200 the planner's cost
  // model misjudged it (QKV at M = 8: one split leaves SMs with 2 CTAs beside SMs with 1).
  std::vector<int> splits;
  // Split-K counts always timed for ImplA. Its planner's pick missed the fastest count on
  // the Llama-2-7B gate_up / down / lm_head GEMVs at M = 1, which made a tune without these
  // counts hand those shapes to cuBLASLt; the six extra GEMV timings per M ≤ 8 cost a few
  // seconds per sweep (docs/experiments/log.md, "gemm_tune.h: the GEMV split counts always
  // timed").
  std::vector<int> gemv_splits = {1, 2, 3, 4, 6, 8};
  // cuBLASLt's heuristic answers timed per (shape, M): the table keeps the fastest
  // (fdpp tune --cublas-algos; 1, the library's pick, unless asked: fdpp/tune.h, TuneOptions::cublas_algos, says why).
  int cublas_algos = 1;
};

// 1..min(64, max_m), then 80, 96, 112, 128, 160, 192, 256, 320, 384, 448, 512 up to
// max_m, then every further 64 up to max_m.
std::vector<int> tune_ms(int max_m);

// One shape per distinct [N, K], the names of those sharing it joined ("o,down" when a
// model's O and down projections are both [H, H]).
std::vector<GemmTimingShape> distinct_gemm_shapes(const std::vector<GemmTimingShape>& shapes);

// The model's GEMMs as the tuner takes them (model/gemm_shapes.h): one per distinct
// [N, K], the names of those sharing it joined, each with the prologue it runs after.
// `fdpp tune` and --autotune tune exactly these.
std::vector<GemmTimingShape> model_gemm_tune_shapes(const ModelConfig& cfg);

// How many measurements the sweep makes at most (a progress bar's total): GEMV up to its
// largest M (the planner's split, up to `extra_splits` + `gemv_extra_splits` more), each
// flat configuration up to its tile (the planner's split and up to `extra_splits` more;
// M of one n8 tile share one timing), cuBLASLt everywhere.
int64_t gemm_tune_measurements(size_t shapes, const std::vector<int>& ms, size_t extra_splits = 0,
                               int cublas_algos = 1, size_t gemv_extra_splits = 0);

// Times every implementation on every (shape, M) of tune_ms(o.max_m) (Backend::time_gemms:
// Unsupported on a backend without GEMM implementations to choose between).
Result<std::vector<GemmTiming>> measure_gemm_timings(Backend& be,
                                                     const std::vector<GemmTimingShape>& shapes,
                                                     const GemmTuneOptions& o,
                                                     const GemmTimingProgress& progress = {});

// measure_gemm_timings, then the table (derive_gemm_table) for this GPU and the
// backend's dtype; the timings are returned through `timings` when it is not null.
Result<TunedGemmTable> tune_gemm_table(Backend& be, const std::vector<GemmTimingShape>& shapes,
                                       const GemmTuneOptions& o,
                                       const GemmTimingProgress& progress = {},
                                       std::vector<GemmTiming>* timings = nullptr);

}  // namespace fdpp
