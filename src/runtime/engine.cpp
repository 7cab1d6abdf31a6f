#include "fdpp/engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backend/backend.h"
#include "backend/make_backend.h"
#include "core/half.h"
#include "model/config.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "runtime/graph_bucket.h"
#include "runtime/sampler.h"
#include "runtime/softmax_setup.h"
#include "runtime/stop_matcher.h"
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

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Logits rows of any activation dtype, as floats on the host.
Status read_logits(Backend& be, const Tensor& logits, std::vector<float>& out) {
  out.resize(logits.numel());
  if (logits.dtype == DType::kF32) return be.copy_to_host(logits, out.data());
  std::vector<uint16_t> raw(logits.numel());
  FDPP_RETURN_IF_ERROR(be.copy_to_host(logits, raw.data()));
  const bool bf16 = logits.dtype == DType::kBF16;
  for (size_t i = 0; i < raw.size(); ++i) out[i] = bf16 ? bf16_to_f32(raw[i]) : f16_to_f32(raw[i]);
  return Status::Ok();
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

}  // namespace

struct Engine::Impl {
  EngineOptions options;
  ModelConfig cfg;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::string gemm_table;  // which dispatch table linear() uses (gemm_table_setup.h)
  bool pdl = false;        // kernels launch with programmatic dependent launch
  // Decode graphs by (batch size, length bucket); a key is captured on its second
  // use, after an eager run has created every lazily built library handle.
  std::map<std::pair<int, int>, std::unique_ptr<StepGraph>> graphs;
  std::set<std::pair<int, int>> warmed;

  Status check_sequence(const std::vector<int>& ids) const;
  bool graphs_enabled() const { return options.cuda_graphs && backend->supports_graphs(); }
  Status run_decode_step(int batch, int bucket);
  Status prefill(Sequence& s, std::vector<float>& scratch, int* first_token);
  void accept(Sequence& s, int token, const TokenCallback& cb);
  void finish(Sequence& s, FinishReason why, const TokenCallback& cb);
};

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
  const auto forget_graphs = [&] {  // graphs keep the plan they were captured with
    I.graphs.clear();
    I.warmed.clear();
  };
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

Status Engine::Impl::run_decode_step(int batch, int bucket) {
  // Each call runs one step (eagerly, or captured then replayed); a replay runs no host code,
  // so the unified softmax's rows are counted here.
  model->softmax().count_rows(/*decode=*/true, int64_t{batch} * cfg.num_heads);
  auto eager = [&]() -> Status {
    FDPP_RETURN_IF_ERROR(model->upload_inputs(batch, batch));
    ForwardPass pass;
    pass.kind = ForwardPass::Kind::kDecode;
    pass.n_tokens = batch;
    pass.max_length = bucket;
    FDPP_RETURN_IF_ERROR(model->forward(pass));
    return model->download_next_ids(batch);
  };
  const auto key = std::make_pair(batch, bucket);
  if (!graphs_enabled() || !warmed.count(key)) {
    warmed.insert(key);
    FDPP_RETURN_IF_ERROR(eager());
    return backend->synchronize();
  }
  auto it = graphs.find(key);
  if (it == graphs.end()) {
    FDPP_RETURN_IF_ERROR(backend->begin_capture());
    Status captured = eager();
    auto graph = backend->end_capture();  // always end the capture, even after a failed op
    FDPP_RETURN_IF_ERROR(captured);
    if (!graph.ok()) return graph.status();
    it = graphs.emplace(key, std::move(graph).value()).first;
  }
  FDPP_RETURN_IF_ERROR(it->second->replay());
  return backend->synchronize();
}

Status Engine::Impl::prefill(Sequence& s, std::vector<float>& scratch, int* first_token) {
  const int n = static_cast<int>(s.tokens.size());
  const int chunk = model->limits().max_tokens;
  for (int start = 0; start < n; start += chunk)
    FDPP_RETURN_IF_ERROR(
        model->prefill_chunk(s.tokens.data() + start, std::min(chunk, n - start), s.slot, start));
  if (s.sampler.greedy()) {
    FDPP_RETURN_IF_ERROR(model->download_next_ids(1));
    FDPP_RETURN_IF_ERROR(backend->synchronize());
    *first_token = model->inputs(1).next_ids[0];
  } else {
    FDPP_RETURN_IF_ERROR(read_logits(*backend, model->logits(1), scratch));
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
      const StepInputs in = I.model->inputs(B);
      int max_len = 0;
      for (int b = 0; b < B; ++b) {
        const Sequence& s = *active[b];
        const int pos = static_cast<int>(s.tokens.size()) - 1;
        in.ids[b] = s.tokens.back();
        in.positions[b] = pos;
        in.slots[b] = s.slot;
        in.lengths[b] = pos + 1;
        max_len = std::max(max_len, pos + 1);
      }
      FDPP_RETURN_IF_ERROR(I.run_decode_step(B, decode_length_bucket(max_len, lim.context)));
      ++t.decode_steps;
      bool need_logits = false;
      for (auto* s : active) need_logits |= !s->sampler.greedy();
      if (need_logits) FDPP_RETURN_IF_ERROR(read_logits(*I.backend, I.model->logits(B), scratch));
      const int V = I.cfg.vocab_size;
      for (int b = 0; b < B; ++b) {
        Sequence& s = *active[b];
        const int token = s.sampler.greedy()
                              ? in.next_ids[b]
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

Result<std::vector<float>> Engine::teacher_forced_logits(const std::vector<int>& ids) {
  Impl& I = *impl_;
  FDPP_RETURN_IF_ERROR(I.check_sequence(ids));
  const int n = static_cast<int>(ids.size());
  const ModelLimits& lim = I.model->limits();
  const int V = I.cfg.vocab_size;
  std::vector<float> all(static_cast<size_t>(n) * V), rows;
  for (int start = 0; start < n; start += lim.max_tokens) {
    const int len = std::min(lim.max_tokens, n - start);
    FDPP_RETURN_IF_ERROR(I.model->prefill_chunk(ids.data() + start, len, /*slot=*/0, start,
                                                /*all_logits=*/true));
    FDPP_RETURN_IF_ERROR(read_logits(*I.backend, I.model->logits(len), rows));
    std::copy(rows.begin(), rows.end(), all.begin() + static_cast<size_t>(start) * V);
  }
  return all;
}

}  // namespace fdpp

namespace fdpp {

Result<std::vector<std::vector<float>>> Engine::teacher_forced_logits_decode(
    const std::vector<std::vector<int>>& seqs) {
  Impl& I = *impl_;
  const ModelLimits& lim = I.model->limits();
  if (seqs.empty() || static_cast<int>(seqs.size()) > lim.max_batch)
    return InvalidArgument(fmt::format("{} sequences for a max batch of {}", seqs.size(), lim.max_batch));
  size_t longest = 0;
  for (const auto& s : seqs) {
    FDPP_RETURN_IF_ERROR(I.check_sequence(s));
    longest = std::max(longest, s.size());
  }
  const int V = I.cfg.vocab_size;
  std::vector<std::vector<float>> out(seqs.size());
  std::vector<float> rows;
  // Position 0 of each sequence is a one-token prefill (there is no cache to decode against yet).
  for (size_t i = 0; i < seqs.size(); ++i) {
    const StepInputs in = I.model->inputs(1);
    in.ids[0] = seqs[i][0];
    in.positions[0] = 0;
    in.slots[0] = static_cast<int>(i);
    FDPP_RETURN_IF_ERROR(I.model->upload_inputs(1, 0));
    ForwardPass pass;
    pass.kind = ForwardPass::Kind::kPrefill;
    pass.n_tokens = 1;
    pass.slot = static_cast<int>(i);
    FDPP_RETURN_IF_ERROR(I.model->forward(pass));
    FDPP_RETURN_IF_ERROR(read_logits(*I.backend, I.model->logits(1), out[i]));
  }
  for (size_t t = 1; t < longest; ++t) {
    std::vector<size_t> active;
    for (size_t i = 0; i < seqs.size(); ++i)
      if (seqs[i].size() > t) active.push_back(i);
    const int B = static_cast<int>(active.size());
    const StepInputs in = I.model->inputs(B);
    for (int b = 0; b < B; ++b) {
      in.ids[b] = seqs[active[b]][t];
      in.positions[b] = static_cast<int>(t);
      in.slots[b] = static_cast<int>(active[b]);
      in.lengths[b] = static_cast<int>(t) + 1;
    }
    FDPP_RETURN_IF_ERROR(I.run_decode_step(B, decode_length_bucket(static_cast<int>(t) + 1, lim.context)));
    FDPP_RETURN_IF_ERROR(read_logits(*I.backend, I.model->logits(B), rows));
    for (int b = 0; b < B; ++b)
      out[active[b]].insert(out[active[b]].end(), rows.begin() + size_t(b) * V, rows.begin() + size_t(b + 1) * V);
  }
  return out;
}

}  // namespace fdpp

// ---- benchmarking -------------------------------------------------------------
namespace fdpp {
namespace {

std::vector<int> random_prompt(int n, int vocab, uint64_t seed) {
  // splitmix64, as the sampler: the same prompt on every platform.
  std::vector<int> ids(n);
  uint64_t s = seed;
  for (int& id : ids) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    id = 3 + static_cast<int>((z ^ (z >> 31)) % static_cast<uint64_t>(vocab - 3));  // skip special ids
  }
  return ids;
}

}  // namespace

Result<double> Engine::benchmark_prefill(int batch, int prompt_len, uint64_t seed) {
  Impl& I = *impl_;
  if (batch < 1 || batch > I.model->limits().max_batch || I.cfg.vocab_size < 4)
    return InvalidArgument(fmt::format("benchmark_prefill: batch {} outside 1..{}", batch,
                                       I.model->limits().max_batch));
  std::vector<float> scratch;
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int b = 0; b < batch; ++b) {
    GenerationRequest r{random_prompt(prompt_len, I.cfg.vocab_size, seed + b), {}};
    r.sampling.temperature = 0;
    FDPP_RETURN_IF_ERROR(I.check_sequence(r.prompt_ids));
    seqs.push_back(std::make_unique<Sequence>(r, b, b));
  }
  FDPP_RETURN_IF_ERROR(I.backend->synchronize());
  const auto t0 = Clock::now();
  for (auto& s : seqs) {
    int token = 0;
    FDPP_RETURN_IF_ERROR(I.prefill(*s, scratch, &token));
  }
  return ms_since(t0);
}

Result<std::vector<double>> Engine::benchmark_decode(int batch, int prompt_len, int steps, uint64_t seed) {
  Impl& I = *impl_;
  const ModelLimits& lim = I.model->limits();
  if (batch < 1 || batch > lim.max_batch || steps < 1 || prompt_len + steps + 2 > lim.context)
    return InvalidArgument(fmt::format(
        "benchmark_decode: batch {} (max {}), {} + {} + 2 positions (context {})", batch,
        lim.max_batch, prompt_len, steps, lim.context));
  GenerationRequest r{random_prompt(prompt_len, I.cfg.vocab_size, seed), {}};
  r.sampling.temperature = 0;
  FDPP_RETURN_IF_ERROR(I.check_sequence(r.prompt_ids));
  Sequence s(r, 0, 0);
  std::vector<float> scratch;
  int token = 0;
  FDPP_RETURN_IF_ERROR(I.prefill(s, scratch, &token));
  // Every slot gets slot 0's cache: the same bytes to stream per sequence as distinct prompts.
  const KVCache& cache = I.model->kv_cache();
  for (int l = 0; l < cache.layout.n_layers; ++l) {
    const Tensor k = cache.k_layer(l), v = cache.v_layer(l);  // (slots, kv_heads, capacity, head_dim)
    for (int b = 1; b < batch; ++b) {
      FDPP_RETURN_IF_ERROR(I.backend->copy(k.rows(0, 1), k.rows(b, b + 1)));
      FDPP_RETURN_IF_ERROR(I.backend->copy(v.rows(0, 1), v.rows(b, b + 1)));
    }
  }
  const StepInputs in = I.model->inputs(batch);
  std::vector<double> ms;
  for (int step = 0; static_cast<int>(ms.size()) < steps; ++step) {
    const int pos = prompt_len + step;
    if (pos + 1 > lim.context) return OutOfRange("benchmark_decode: the context filled up before the timed steps");
    for (int b = 0; b < batch; ++b) {
      in.ids[b] = token;
      in.positions[b] = pos;
      in.slots[b] = b;
      in.lengths[b] = pos + 1;
    }
    const int bucket = decode_length_bucket(pos + 1, lim.context);
    // A step that warms up or captures its graph is run but not timed (graph keys
    // change when the length crosses a bucket boundary).
    const bool timed = I.graphs_enabled() ? I.graphs.count({batch, bucket}) > 0 : step >= 2;
    FDPP_RETURN_IF_ERROR(I.backend->synchronize());
    const auto t0 = Clock::now();
    FDPP_RETURN_IF_ERROR(I.run_decode_step(batch, bucket));
    if (timed && static_cast<int>(ms.size()) < steps) ms.push_back(ms_since(t0));
    token = in.next_ids[0];
  }
  return ms;
}

}  // namespace fdpp
