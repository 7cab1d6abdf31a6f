#include "fdpp/engine.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backend/backend.h"
#include "backend/make_backend.h"
#include "model/config.h"
#include "model/model.h"
#include "model/model_tokenizer.h"
#include "model/safetensors.h"
#include "runtime/decode_step.h"
#include "runtime/engine_impl.h"
#include "runtime/softmax_setup.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tuning/gemm_table_setup.h"

namespace fdpp {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kEos: return "eos";
    case FinishReason::kStop: return "stop";
    case FinishReason::kContextFull: return "context_full";
  }
  return "?";
}

bool cuda_available() { return cuda_backend_available(); }

namespace {

using engine_detail::Clock;
using engine_detail::ms_since;
using Sequence = engine_detail::Sequence;

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;
const ModelConfig& Engine::config() const { return impl_->cfg; }
const Tokenizer* Engine::tokenizer() const { return impl_->tokenizer.get(); }
Backend& Engine::backend() { return *impl_->backend; }
Model& Engine::model() { return *impl_->model; }
const EngineOptions& Engine::options() const { return impl_->options; }
const std::string& Engine::gemm_table_source() const { return impl_->gemm_table; }
bool Engine::pdl_active() const { return impl_->pdl; }

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  if (o.max_batch < 1 || o.max_batch > 64)
    return InvalidArgument(fmt::format("max batch {} is outside 1..64", o.max_batch));
  if (o.context < 0 || o.prefill_chunk < 0)
    return InvalidArgument("context and prefill chunk must not be negative");
  FDPP_ASSIGN_OR_RETURN(impl->cfg, load_model_config(o.model_dir));
  const ModelConfig& cfg = impl->cfg;

  auto tok = load_tokenizer(o.model_dir, cfg);
  if (tok.ok()) {
    impl->tokenizer = std::move(tok).value();
  } else if (tok.status().code() == StatusCode::kNotFound) {
    spdlog::debug("{}: no tokenizer; prompts must be given as ids", o.model_dir.string());
  } else {
    return tok.status();
  }

  FDPP_ASSIGN_OR_RETURN(SafetensorsModel st, SafetensorsModel::open(o.model_dir));
  const BackendOptions bo{.device = o.device, .dtype = o.dtype, .checkpoint_dtype = cfg.torch_dtype,
                          .gemm = o.gemm, .pdl = o.pdl, .fuse = o.fuse};
  FDPP_ASSIGN_OR_RETURN(impl->backend, make_backend(bo, &impl->pdl));
  Backend& be = *impl->backend;
  // Before the weights take their memory: --autotune times rotated weight copies.
  GemmTableTune tuned;
  FDPP_ASSIGN_OR_RETURN(impl->gemm_table, setup_gemm_table(o, cfg, be, &tuned));

  ModelLimits lim;
  lim.context = o.context > 0 ? o.context : cfg.max_position_embeddings;
  if (lim.context > cfg.max_position_embeddings)
    spdlog::warn("context {} exceeds the model's max_position_embeddings {}", lim.context,
                 cfg.max_position_embeddings);
  lim.max_batch = o.max_batch;
  const int chunk = o.prefill_chunk > 0 ? o.prefill_chunk : std::min(lim.context, 2048);
  lim.max_tokens = std::max(chunk, lim.max_batch);

  const MemoryPlan mem = plan_memory(cfg, be.activation_dtype(), lim);
  const size_t free_bytes = be.free_memory();
  if (mem.total() > free_bytes) {
    constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
    return OutOfMemory(fmt::format(
        "the model needs {:.2f} GiB (weights {:.2f} + KV cache {:.2f} for {} x {} positions + "
        "activations {:.2f}) but only {:.2f} GiB are free on {}; lower --ctx or --batch",
        mem.total() / GiB, mem.weight_bytes / GiB, mem.kv_cache_bytes / GiB, lim.max_batch,
        lim.context, mem.activation_bytes / GiB, free_bytes / GiB, device_name(be.device())));
  }
  FDPP_ASSIGN_OR_RETURN(impl->model, Model::create(cfg, st, be, lim));
  FDPP_RETURN_IF_ERROR(setup_softmax(o, *impl->model));  // attention softmax and φ
  impl->step = std::make_unique<DecodeStep>(*impl->model, o.cuda_graphs);
  std::unique_ptr<Engine> engine(new Engine(std::move(impl)));
  if (!tuned.ties.empty()) FDPP_RETURN_IF_ERROR(engine->settle_gemm_ties(tuned));
  return engine;
}

// --autotune's batch-1 near ties (gemm_table_setup.h), settled by batch-1 decode steps:
// 12 timed steps after 32 prompt tokens per choice (~0.1 s each), their median kept.
Status Engine::settle_gemm_ties(const GemmTableTune& tune) {
  Impl& I = *impl_;
  constexpr int kPrompt = 32, kSteps = 12;
  if (I.model->limits().context < kPrompt + kSteps + 2) {
    spdlog::warn("--autotune: a context of {} is too short to time decode steps; the batch-1 "
                 "near ties keep their fastest choice alone", I.model->limits().context);
    return Status::Ok();
  }
  // Captured graphs keep the GEMM plan they were captured with.
  const auto forget_graphs = [&] { I.step->forget_graphs(); };
  uint64_t seed = 0;
  const GemmStepTimer time_step = [&](const TunedGemmTable& t) -> Result<double> {
    FDPP_RETURN_IF_ERROR(install_gemm_table(*I.backend, t));
    forget_graphs();
    FDPP_ASSIGN_OR_RETURN(std::vector<double> ms, benchmark_decode(1, kPrompt, kSteps, ++seed));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  FDPP_ASSIGN_OR_RETURN(TunedGemmTable table, settle_gemm_step_ties(tune, time_step));
  if (!tune.path.empty()) {
    if (Status s = save_gemm_table(table, tune.path); !s.ok())
      spdlog::warn("--autotune: the settled table is used but not saved: {}", s.message());
  }
  FDPP_RETURN_IF_ERROR(install_gemm_table(*I.backend, std::move(table)));
  forget_graphs();
  return reset_softmax_stats();  // the timed steps counted unified rows
}

Result<std::vector<int>> Engine::tokenize(std::string_view text) const {
  if (!impl_->tokenizer)
    return NotFound(fmt::format("{} has no tokenizer: pass the prompt as ids (--prompt-ids)",
                                impl_->options.model_dir.string()));
  return impl_->tokenizer->encode(text, impl_->tokenizer->add_bos_by_default());
}

Status Engine::Impl::prefill(Sequence& s, std::vector<float>& scratch, int* first_token) {
  FDPP_RETURN_IF_ERROR(step->prefill(s.slot, s.tokens));
  if (s.sampler.greedy()) {
    FDPP_ASSIGN_OR_RETURN(*first_token, step->prefill_argmax());
  } else {
    FDPP_RETURN_IF_ERROR(step->read_logits(1, scratch));
    *first_token = s.sampler.sample(scratch);
  }
  return Status::Ok();
}

void Engine::Impl::finish(Sequence& s, FinishReason why, const TokenCallback& cb) {
  std::string tail;
  if (s.decoder) tail = s.stop.push(s.decoder->flush());
  tail += s.stop.flush();
  if (cb && !tail.empty()) cb(s.index, -1, tail);
  s.result.text = s.stop.text();
  s.result.finish = why;
  s.done = true;
}

void Engine::Impl::accept(Sequence& s, int token, const TokenCallback& cb) {
  const auto& eos = cfg.eos_token_ids;
  if (!s.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
    finish(s, FinishReason::kEos, cb);
    return;
  }
  s.tokens.push_back(token);
  s.result.output_ids.push_back(token);
  std::string text = s.decoder ? s.stop.push(s.decoder->push(token)) : std::string();
  if (cb) cb(s.index, token, text);
  if (s.stop.stopped()) {
    finish(s, FinishReason::kStop, cb);
  } else if (static_cast<int>(s.result.output_ids.size()) >= s.max_new) {
    finish(s, FinishReason::kLength, cb);
  } else if (static_cast<int>(s.tokens.size()) > model->limits().context) {
    // The newest token would need position `context` to be fed back.
    finish(s, FinishReason::kContextFull, cb);
  }
}

Result<std::vector<GenerationResult>> Engine::generate(const std::vector<GenerationRequest>& requests,
                                                       const TokenCallback& on_token,
                                                       GenerationTiming* timing) {
  Impl& I = *impl_;
  const ModelLimits& lim = I.model->limits();
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerationRequest& r = requests[i];
    const auto where = [&] { return requests.size() > 1 ? fmt::format("request {}: ", i) : std::string(); };
    Status valid = I.check_sequence(r.prompt_ids);
    if (!valid.ok()) return Status(valid.code(), where() + valid.message());
    if (r.sampling.max_new_tokens < 1)
      return InvalidArgument(fmt::format("{}max new tokens must be at least 1, got {}", where(),
                                         r.sampling.max_new_tokens));
    if (r.sampling.temperature < 0 || r.sampling.top_k < 0 || r.sampling.top_p <= 0 || r.sampling.top_p > 1)
      return InvalidArgument(where() + "temperature must be >= 0, top-k >= 0 and top-p in (0, 1]");
  }

  GenerationTiming t;
  std::vector<GenerationResult> results(requests.size());
  std::vector<float> scratch;
  std::vector<DecodeRow> rows;
  for (size_t wave = 0; wave < requests.size(); wave += lim.max_batch) {
    const size_t end = std::min(requests.size(), wave + lim.max_batch);
    std::vector<std::unique_ptr<Sequence>> seqs;
    for (size_t i = wave; i < end; ++i) {
      auto s = std::make_unique<Sequence>(requests[i], static_cast<int>(i), static_cast<int>(i - wave));
      // The prompt is the decoder's context, so the first generated piece gets its leading
      // space right (SentencePiece drops the space only at the start of a text).
      if (I.tokenizer) s->decoder = std::make_unique<StreamDecoder>(*I.tokenizer, s->tokens);
      seqs.push_back(std::move(s));
    }

    auto t0 = Clock::now();
    for (auto& s : seqs) {
      int token = 0;
      FDPP_RETURN_IF_ERROR(I.prefill(*s, scratch, &token));
      t.prompt_tokens += static_cast<int64_t>(s->tokens.size());
      I.accept(*s, token, on_token);
      ++t.generated_tokens;
    }
    t.prefill_ms += ms_since(t0);

    t0 = Clock::now();
    for (;;) {
      std::vector<Sequence*> active;
      for (auto& s : seqs)
        if (!s->done) active.push_back(s.get());
      if (active.empty()) break;
      const int B = static_cast<int>(active.size());
      rows.clear();
      for (const Sequence* s : active)
        rows.push_back({s->slot, s->tokens.back(), static_cast<int>(s->tokens.size()) - 1});
      FDPP_RETURN_IF_ERROR(I.step->decode(rows));
      ++t.decode_steps;
      bool need_logits = false;
      for (auto* s : active) need_logits |= !s->sampler.greedy();
      if (need_logits) FDPP_RETURN_IF_ERROR(I.step->read_logits(B, scratch));
      const int V = I.cfg.vocab_size;
      for (int b = 0; b < B; ++b) {
        Sequence& s = *active[b];
        const int token = s.sampler.greedy()
                              ? I.step->next_id(b)
                              : s.sampler.sample(std::span<const float>(scratch).subspan(size_t(b) * V, V));
        I.accept(s, token, on_token);
        ++t.generated_tokens;
      }
    }
    t.decode_ms += ms_since(t0);
    for (auto& s : seqs) results[s->index] = std::move(s->result);
  }
  if (timing) *timing = t;
  return results;
}

Status Engine::Impl::check_sequence(const std::vector<int>& ids) const {
  const int n = static_cast<int>(ids.size());
  const int context = model->limits().context;
  if (n < 1) return InvalidArgument("the prompt is empty");
  if (n > context)
    return OutOfRange(fmt::format("the prompt has {} tokens, more than the context of {} (--ctx)", n, context));
  for (int id : ids)
    if (id < 0 || id >= cfg.vocab_size)
      return OutOfRange(fmt::format("token id {} is outside the vocabulary [0, {})", id, cfg.vocab_size));
  return Status::Ok();
}

}  // namespace fdpp
