// Timing of the three GEMM implementations on decode-shaped problems
// (fdpp bench-gemm, and the tuner of issue 6): y[M, N] = x[M, K] · W[N, K]ᵀ.
//
// Method, per (shape, M, implementation): `copies` copies of W filled with
// random values (never zeros) spanning at least `rotate_bytes`, so the 50 MB L2
// cannot serve a repeat; one eager pass over every copy (cuBLASLt plans, first
// launches), then a CUDA graph of `calls` back-to-back calls cycling through the
// copies (what a decode step replays), warmed up twice and replayed `reps`
// times between CUDA events (with `rounds` > 1, spread over rounds that visit every
// candidate of one M in turn). The per-call time is replay time / calls; the
// median and the fastest replay are reported.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/gemm_timing.h"
#include "dispatch/gemm_plan.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

class CudaBackend;

// The timing contract's shape (backend/gemm_timing.h): bench-gemm and the tuner time the same.
using GemmBenchShape = GemmTimingShape;

struct GemmBenchOptions {
  std::vector<GemmBenchShape> shapes;
  std::vector<int> ms;
  // Which implementations to time; every ImplB configuration is timed when kFlat is in.
  bool gemv = true, flat = true, cublas = true;
  // Split-K counts to time for ImplA / ImplB (each resolved as the planner would
  // clamp it; duplicates dropped). Empty: only the planner's own choice.
  std::vector<int> splits;
  // More split-K counts for ImplA only (the tuner's default sweep; see tuning/gemm_tune.h).
  std::vector<int> gemv_splits;
  // Time each ImplB plan once per count of n8 tiles of x and give that timing to every M
  // of the tile: the flat GEMM pads M to a multiple of 8, so M = 1..8 (9..16, ...) run
  // the same kernel over the same bytes. The tuner's saving; bench-gemm times every M.
  bool flat_once_per_tile = false;
  // cuBLASLt: its heuristic's first this-many answers are each timed (the tuner's
  // profiling of the library's algorithms); an index the heuristic does not offer for a
  // shape is skipped.
  int cublas_algos = 1;
  int reps = 30;                              // timed graph replays per measurement
  // The replays of one M's candidates are spread over this many rounds that visit every
  // candidate in turn (gemm_bench.cpp says why); 1: each candidate's replays in one block.
  int rounds = 1;
  // Where the engine fuses the shape's prologue (M up to kMaxFusedPrologueM, fusion on),
  // time each implementation as fused_linear runs it: the GEMV with the prologue inside,
  // the others after the prologue's own kernel. The plain kernels misjudge both: a tune of
  // the plain kernel picked a split for Llama-2-7B down's fused GEMV that made the decode
  // step slower, and timing the fused GEMV against plain cuBLASLt then handed down to
  // cuBLASLt, slower in the step with its SiLU-gate kernel (docs/experiments/log.md,
  // "gemm_bench.h: timing batch 1 as fused_linear runs it").
  bool engine_prologues = false;
  int min_calls = 16;                         // calls per graph (at least one per copy)
  int min_copies = 8;                         // weight copies rotated through
  int64_t rotate_bytes = int64_t{512} << 20;  // the copies span at least this
  // ... unless that takes more copies than this: a W under rotate_bytes / max_copies (8 MB at
  // 512 MB) then stays in the L2 across its copies, which is also where the decode step finds
  // it when the whole model fits the L2 (stories260K: 0.5 MB of weights). Without the cap
  // its 8 KB shapes made graphs of ~30 000 calls, and `--autotune` on it ran for minutes
  // (docs/experiments/log.md, "gemm_bench.h: the copy cap"); the Llama-2 shapes take 2-16
  // copies.
  int max_copies = 64;
};

struct GemmMeasurement {
  std::string shape;
  int64_t n = 0, k = 0;
  int m = 0;
  ImplChoice choice;   // as run: the split-K resolved
  bool planned = true; // the split the planner picks (not one only a --splits sweep added)
  int timed_m = 0;     // the M it was timed at: m, or the tile's first M (flat_once_per_tile)
  double us = 0;       // median per call
  double us_min = 0;   // fastest replay, per call
  double bytes = 0;    // W + x + y bytes moved per call
  double gbs() const { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0; }
  double tflops() const { return us > 0 ? 2.0 * m * n * k / (us * 1e-6) / 1e12 : 0; }
};

// Called after each measurement (progress, streaming output).
using GemmBenchProgress = std::function<void(const GemmMeasurement&)>;

// Runs every (shape, M, implementation) that can run on the backend's dtype;
// one an implementation cannot run (M > 8 for ImplA, say) is skipped. The
// backend's policy and table are not used: each implementation is forced.
Result<std::vector<GemmMeasurement>> run_gemm_bench(CudaBackend& be, const GemmBenchOptions& o,
                                                    const GemmBenchProgress& progress = {});

}  // namespace fdpp::cuda
