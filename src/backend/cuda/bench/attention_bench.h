// Timing of the attention kernels with the synchronized and the unified-max softmax
// (fdpp bench-attention; design.md, Technique 1), on random fp16/bf16 data (never zeros).
//
// Decode: q (B, Hq, D) against L cached keys per sequence. `layers` KV caches spanning at
// least 4× the L2 are rotated, so no repeat is served from the 50 MB L2; one eager call per
// layer (workspace, occupancy), then a CUDA graph of `calls` back-to-back calls cycling
// through the layers (what a decode step replays), replayed `reps` times between CUDA events.
// Per call: replay time / calls; median and fastest replay reported. Bytes = K + V read.
//
// Prefill: B sequences of L tokens, causal, in one launch (the batched launcher), timed one
// launch at a time between events after warm-up; FLOPs = 4·B·L²·D·Hq / 2 (causal), the
// convention of the torch and cuDNN figures in design.md.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "fdpp/status.h"

namespace fdpp::cuda {

class CudaBackend;

struct AttentionBenchCase {
  int batch = 1;
  int length = 1024;  // keys per sequence (decode) or tokens per sequence (prefill)
  int n_heads = 32;
  int n_kv_heads = 32;
  int head_dim = 128;
  SoftmaxMode mode = SoftmaxMode::kSynchronized;
  float phi = 0.f;      // unified: φ of every head, s units
  bool follow = false;  // unified decode: row-following φ
  int reps = 20;        // timed repetitions
  int calls = 32;       // decode: calls per captured graph (at least one per layer)
};

struct AttentionBenchResult {
  double us = 0;        // median per call
  double us_min = 0;    // fastest
  double bytes = 0;     // decode: K + V bytes read per call
  double flops = 0;     // prefill: causal FLOPs per call
  int splits = 0;       // decode: KV splits of the plan
  bool wide_tiles = false;  // decode: the tensor-core kernel ran its wide warp tiles
  int layers = 0;       // decode: KV caches rotated through
  int64_t rows = 0;     // unified rows computed (all calls, warm-up included)
  int64_t fallbacks = 0;  // of those, recomputed synchronized
  double gbs() const { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0; }
  double tflops() const { return us > 0 ? flops / (us * 1e-6) / 1e12 : 0; }
};

// The backend's dtype is the data's (f16 or bf16).
Result<AttentionBenchResult> bench_decode_attention(CudaBackend& be, const AttentionBenchCase& c);
Result<AttentionBenchResult> bench_prefill_attention(CudaBackend& be, const AttentionBenchCase& c);

}  // namespace fdpp::cuda
