// The public entry point: load a Hugging Face model folder, generate text.
//
//   auto engine = fdpp::Engine::create({.model_dir = "models/stories260K"});
//   auto out = (*engine)->generate({{.prompt_ids = ids, .sampling = {.temperature = 0}}}, nullptr);
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fdpp/device.h"
#include "fdpp/model_info.h"
#include "fdpp/status.h"
#include "fdpp/tokenizer.h"

namespace fdpp {

struct ModelConfig;
class Tokenizer;
class Backend;
class Model;
struct GemmTableTune;  // tuning/gemm_table_setup.h

struct EngineOptions {
  std::filesystem::path model_dir;
  std::string device = "cpu";  // "cpu" or "cuda"
  std::string dtype;           // CUDA: "fp16" | "bf16"; empty: the checkpoint's (f32 -> fp16). CPU: f32.
  int context = 0;             // KV positions per sequence; 0: the model's max_position_embeddings
  int max_batch = 1;           // sequences decoded together (KV-cache slots), 1..64
  int prefill_chunk = 0;       // prompt tokens per forward; 0: min(context, 2048)
  bool cuda_graphs = true;     // capture decode steps (ignored on the CPU)
  std::string gemm = "auto";   // linear layers: "auto" | "gemv" | "flat" | "cublas" (CUDA)
  // The GEMM dispatch table (`fdpp tune`) for gemm auto|flat: this file (an error if it is
  // missing, malformed or from another GPU); empty: the cache's file for this GPU, else
  // the built-in defaults.
  std::filesystem::path gemm_table;
  bool autotune = false;       // tune the model's GEMM shapes the table lacks at start, and save
  // Programmatic dependent launch (CUDA, compute capability 9.0+): each of fdpp's kernels is
  // scheduled while the previous one finishes and starts its weight loads early
  // (src/backend/cuda/launch.h). Off: plain stream order, for measuring the difference.
  bool pdl = true;
  // RMSNorm and the SiLU gate applied by the GEMV while it loads x (CUDA decode), instead
  // of as kernels of their own. Off: separate kernels, for measuring the difference.
  bool fuse = true;
  // Attention softmax (design.md, Technique 1): "sync" (online softmax), "unified" (one φ per
  // row, exact fallback), "auto" (unified decode with phi_source's φ; unified prefill when a
  // calibration file is found, else sync). Results are exact either way.
  std::string softmax = "sync";
  // Unified decode's φ: "follow" (the previous step's row max), "calibrated" (the file's),
  // "auto" (calibrated when a calibration file is found, else follow).
  std::string phi = "auto";
  std::filesystem::path calibration;  // φ file; empty: next to the model, then the cache dir
};

struct SamplingParams {
  float temperature = 0.8f;  // 0: greedy
  int top_k = 40;            // 0: off
  float top_p = 0.95f;       // 1: off
  uint64_t seed = 0;
  int max_new_tokens = 128;
  std::vector<std::string> stop;  // generation ends before the first occurrence of any of these
  bool ignore_eos = false;
};

struct GenerationRequest {
  std::vector<int> prompt_ids;
  SamplingParams sampling;
};

enum class FinishReason { kLength, kEos, kStop, kContextFull };
const char* finish_reason_name(FinishReason r);

struct GenerationResult {
  std::vector<int> prompt_ids;
  std::vector<int> output_ids;  // generated tokens (the EOS token is not included)
  std::string text;             // decoded output (empty without a tokenizer), cut at a stop string
  FinishReason finish = FinishReason::kLength;
};

struct GenerationTiming {
  double prefill_ms = 0;   // all prompts, to the first sampled tokens
  double decode_ms = 0;    // all decode steps
  int64_t prompt_tokens = 0;
  int64_t decode_steps = 0;
  int64_t generated_tokens = 0;
};

// The unified softmax's record since the last reset (fdpp bench, generate --json).
struct SoftmaxStats {
  std::string prefill = "sync";  // the softmax each path runs: "sync" or "unified"
  std::string decode = "sync";
  std::string phi;               // unified decode's φ: "follow" or "calibrated"
  std::string phi_source;        // where φ came from: "calibration FILE" or "default 0"
  int64_t prefill_rows = 0;      // (token, head) rows per layer that ran the unified prefill
  int64_t decode_rows = 0;       // (sequence, head) rows per layer that ran the unified decode
  std::vector<int64_t> prefill_fallbacks;  // per layer: rows recomputed (exactly)
  std::vector<int64_t> decode_fallbacks;
  int64_t fallbacks() const;
  // Fallbacks over unified rows, all layers and both paths together (0 without rows).
  double fallback_rate() const;
};

// Called as each token is accepted: the sequence index in the request list, the
// token id and the newly completed text (may be empty while a multi-byte
// character or a possible stop string is held back).
using TokenCallback = std::function<void(int seq, int token, std::string_view text)>;

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The loaded model's architecture (what the apps print; config() is the library's view).
  ModelSummary summary() const;
  // The folder's tokenizer, valid while the engine lives; nullopt when the folder has none.
  std::optional<TokenizerHandle> tokenizer_handle() const;

  const ModelConfig& config() const;
  const Tokenizer* tokenizer() const;  // nullptr when the folder has none
  Backend& backend();
  Model& model();
  const EngineOptions& options() const;
  // Which GEMM dispatch table the linear layers use: "file PATH", "built-in defaults (…)"
  // or "none (why)".
  const std::string& gemm_table_source() const;
  // Whether kernels launch with programmatic dependent launch (--pdl on, an sm_90 device and
  // kernels built for it); false on the CPU.
  bool pdl_active() const;

  // Text -> ids with the tokenizer's BOS rule; an error without a tokenizer.
  Result<std::vector<int>> tokenize(std::string_view text) const;

  // Runs every request (in waves of max_batch) to completion.
  Result<std::vector<GenerationResult>> generate(const std::vector<GenerationRequest>& requests,
                                                 const TokenCallback& on_token,
                                                 GenerationTiming* timing = nullptr);

  // ---- benchmarking (fdpp bench) ----------------------------------------------
  // Milliseconds to prefill `batch` prompts of `prompt_len` random tokens, one
  // sequence after another as generate() does, to their first tokens.
  Result<double> benchmark_prefill(int batch, int prompt_len, uint64_t seed);
  // Milliseconds of each of `steps` decode steps of `batch` sequences that start
  // at length prompt_len + 1. One random prompt is prefilled once and its KV cache
  // copied to every slot, so long contexts cost one prefill; the first two steps
  // (eager warm-up and graph capture) are run but not returned.
  Result<std::vector<double>> benchmark_decode(int batch, int prompt_len, int steps, uint64_t seed);

  // ---- unified softmax (engine_softmax.cpp) --------------------------------------
  // Reads the device's fallback counters (waits for the device).
  Result<SoftmaxStats> softmax_stats();
  Status reset_softmax_stats();

  // Logits (ids.size(), vocab) when the sequence is fed whole: row i predicts ids[i+1].
  Result<std::vector<float>> teacher_forced_logits(const std::vector<int>& ids);
  // The same through the decode path: the sequences (at most max_batch) are fed
  // one token per step in batched decode steps (CUDA graphs included); result i
  // is (seqs[i].size(), vocab).
  Result<std::vector<std::vector<float>>> teacher_forced_logits_decode(
      const std::vector<std::vector<int>>& seqs);

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  // --autotune's batch-1 near ties, settled by timing decode steps (engine.cpp).
  Status settle_gemm_ties(const GemmTableTune& tune);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fdpp
