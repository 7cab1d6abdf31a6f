// The measurements behind fdpp bench (a model's prefill and decode against the bandwidth
// roofline), bench-gemm (the three GEMM implementations on linear-layer shapes) and
// bench-attention (the attention kernels, synchronized vs unified softmax). Each returns its
// records; the apps print them as markdown or JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fdpp/device.h"
#include "fdpp/engine.h"
#include "fdpp/status.h"

namespace fdpp {

// ---- fdpp bench ------------------------------------------------------------------------

struct BenchStat {
  double mean = 0, std = 0;  // over the timed repetitions; std is the sample deviation
};

struct ModelBenchOptions {
  // The engine to time. max_batch, context and prefill_chunk are set from the lists below:
  // whole prompts in one forward (time to first token as a server would see it).
  EngineOptions engine;
  std::vector<int> batches;  // each positive, at least one
  std::vector<int> prompts;  // prompt lengths, each positive, at least one
  int n_gen = 128;           // decode steps per repetition, at least 2
  int reps = 3;              // timed repetitions after one warm-up
};

// One (batch, prompt) point. Decode is set against the roofline: every weight streamed once
// per step (the embedding table only when it is also the LM head) plus the KV cache read.
struct ModelBenchRow {
  int batch = 0, prompt = 0, gen = 0;
  BenchStat prefill_ms, decode_ms_per_step;
  double prefill_tps = 0, decode_tps = 0;
  double step_bytes = 0;    // bytes one decode step reads, at the timed steps' mean length
  double gbs = 0;           // step_bytes at the measured step time
  double roofline_pct = 0;  // the step time the read bandwidth allows, over the measured one
  double roofline_tps = 0;  // 0 when no bandwidth was measured (CPU)
  SoftmaxStats softmax;     // the timed repetitions' unified-softmax record
};

struct ModelBenchReport {
  std::optional<DeviceInfo> gpu;           // CUDA, when the device answered
  std::optional<ReadBandwidth> bandwidth;  // CUDA: measured before the model was loaded
  std::string model_type;
  std::string dtype;  // the weights' ("f16", "bf16", "f32")
  bool pdl = false;   // Engine::pdl_active()
  std::string gemm_table;  // Engine::gemm_table_source()
  double weight_bytes_per_step = 0;
  std::vector<ModelBenchRow> rows;  // prompts outer, batches inner, in the lists' order
};

using ModelBenchProgress = std::function<void(const ModelBenchRow&)>;

// Loads the model and times every (prompt, batch); `progress` after each.
Result<ModelBenchReport> bench_model(const ModelBenchOptions& options,
                                     const ModelBenchProgress& progress = {});

// ---- fdpp bench-gemm -------------------------------------------------------------------

// The largest cuBLASLt heuristic index a dispatch table may name (--cublas-algos is 1..this+1).
int max_cublas_algo();

struct GemmBenchShape {
  std::string name;  // "SET:qkv", SET the model folder or the built-in set's name
  int64_t n = 0;
  int64_t k = 0;
};

// The linear-layer shapes of the model in `model_dir`, or when it is empty of each built-in
// set ("llama-2-7b", "llama-2-13b": the published configurations); an InvalidArgument names
// an unknown set.
Result<std::vector<GemmBenchShape>> gemm_bench_shapes(const std::string& model_dir,
                                                      const std::vector<std::string>& sets);

struct GemmBenchSpec {
  std::vector<GemmBenchShape> shapes;
  std::vector<int> ms;
  std::vector<int> splits;  // extra split-K counts for gemv / flat; empty: the planner's only
  bool gemv = true, flat = true, cublas = true;  // every flat configuration when flat
  int cublas_algos = 1;  // cuBLASLt heuristic answers timed (1: the library's pick)
  int reps = 30;         // timed graph replays per measurement
  std::string dtype = "fp16";  // "fp16" or "bf16"
  bool pdl = true;             // each call overlaps the previous one's tail, as in the engine
};

struct GemmBenchRecord {
  std::string shape;
  int64_t n = 0, k = 0;
  int m = 0;
  std::string impl;         // "gemv", "flat", "cublas"
  int config = -1;          // flat: the configuration's id; otherwise -1
  std::string config_name;  // the flat configuration's name, else impl
  std::string choice;       // the dispatch-table spelling: "flat:n64k128s4m8/s2", "cublas/a2"
  int splits = 0;           // split-K as run
  int algo = 0;             // cuBLASLt heuristic index
  bool planned = true;      // the split the planner picks (not one only --splits added)
  double us = 0;            // median per call
  double us_min = 0;        // fastest replay, per call
  double bytes = 0;         // W + x + y per call
  double gbs = 0;
  double tflops = 0;
  // The "× cuBLASLt" reference: cuBLASLt's own pick at this (shape, M), when it was timed.
  std::optional<double> cublas_us;
};

struct FlatConfigInfo {
  int id = 0;
  std::string name;
  int block_n = 0, block_k = 0, warps_n = 0, warps_k = 0, stages = 0;
  int max_m = 0;
  int smem_bytes = 0;
};

struct GemmBenchReport {
  DeviceInfo gpu;
  ReadBandwidth bandwidth;  // measured first, before anything else takes memory
  std::string dtype;        // "f16" | "bf16"
  std::vector<FlatConfigInfo> flat_configs;
  std::vector<GemmBenchRecord> records;  // in run order
};

using GemmBenchProgress = std::function<void(const GemmBenchRecord&)>;

// Times every (shape, M, implementation) the dtype can run (ImplA only up to its M, say);
// the method is backend/cuda/bench/gemm_bench.h's. Needs a CUDA device.
Result<GemmBenchReport> bench_gemm(const GemmBenchSpec& spec, const GemmBenchProgress& progress = {});

// ---- fdpp bench-attention --------------------------------------------------------------

enum class AttentionSoftmax { kSync, kUnified };
// The decode tensor-core kernel's warp tiles at head_dim 128: the engine's rule, or forced.
enum class AttentionTiles { kAuto, kNarrow, kWide };

struct AttentionBenchSpec {
  bool decode = true, prefill = true;
  std::vector<AttentionSoftmax> softmax;
  std::vector<std::string> dtypes;  // "fp16", "bf16"; each checked when its turn comes
  std::vector<int> batches, lengths;
  std::vector<std::pair<int, int>> heads;  // (Hq, Hkv)
  std::vector<int> prefill_batches, prefill_lengths;
  std::vector<std::pair<int, int>> prefill_heads;
  int head_dim = 128;
  std::vector<int> splits;  // decode split counts; 0: the engine's heuristic
  std::vector<AttentionTiles> tiles;
  float phi = 0;        // unified: φ of every head, s units
  bool follow = false;  // unified decode: row-following φ
  int reps = 20;
};

struct AttentionBenchRecord {
  std::string kind;     // "decode" | "prefill"
  std::string dtype;    // "f16" | "bf16"
  std::string softmax;  // "sync" | "unified"
  int batch = 0, length = 0, heads_q = 0, heads_kv = 0;
  double us = 0, us_min = 0;
  double gbs = 0;     // decode: K + V read
  double tflops = 0;  // prefill: causal FLOPs
  int splits = 0;     // decode: KV splits of the plan
  bool wide_tiles = false;
  int layers = 0;  // decode: KV caches rotated through
  int64_t rows = 0, fallbacks = 0;  // unified rows computed and recomputed synchronized
  double gain_vs_sync = 0;  // unified: the same configuration's sync time over this; else 0
};

struct AttentionBenchReport {
  std::optional<DeviceInfo> gpu;
  ReadBandwidth bandwidth;
  std::vector<AttentionBenchRecord> records;  // in run order
};

using AttentionBenchProgress = std::function<void(const AttentionBenchRecord&)>;

// Times each case on random data (backend/cuda/bench/attention_bench.h); kernels run without
// programmatic dependent launch, as torch's and cuDNN's do. Needs a CUDA device.
Result<AttentionBenchReport> bench_attention(const AttentionBenchSpec& spec,
                                             const AttentionBenchProgress& progress = {});

}  // namespace fdpp
