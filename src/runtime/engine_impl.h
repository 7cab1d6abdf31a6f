// Engine::Impl and a generation's per-sequence state: shared by engine.cpp (create,
// generate) and engine_probes.cpp (teacher forcing, benchmarks).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model.h"
#include "runtime/decode_step.h"
#include "runtime/sampler.h"
#include "runtime/stop_matcher.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace fdpp {

namespace engine_detail {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Sequence {
  int index = 0;  // position in the request list
  int slot = 0;   // KV-cache slot
  std::vector<int> tokens;  // prompt + accepted tokens; the last one is not in the cache yet
  int max_new = 0;
  bool ignore_eos = false;
  Sampler sampler;
  std::unique_ptr<StreamDecoder> decoder;
  StopMatcher stop;
  GenerationResult result;
  bool done = false;

  Sequence(const GenerationRequest& r, int idx, int slot_)
      : index(idx), slot(slot_), tokens(r.prompt_ids), max_new(r.sampling.max_new_tokens),
        ignore_eos(r.sampling.ignore_eos), sampler(r.sampling, static_cast<uint64_t>(idx)),
        stop(r.sampling.stop) {
    result.prompt_ids = r.prompt_ids;
  }
};

}  // namespace engine_detail

struct Engine::Impl {
  using Sequence = engine_detail::Sequence;

  EngineOptions options;
  ModelConfig cfg;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::string gemm_table;  // which dispatch table linear() uses (gemm_table_setup.h)
  bool pdl = false;        // kernels launch with programmatic dependent launch
  std::unique_ptr<DecodeStep> step;  // the model's forwards and its decode graphs

  Status check_sequence(const std::vector<int>& ids) const;
  Status prefill(Sequence& s, std::vector<float>& scratch, int* first_token);
  void accept(Sequence& s, int token, const TokenCallback& cb);
  void finish(Sequence& s, FinishReason why, const TokenCallback& cb);
};

}  // namespace fdpp
