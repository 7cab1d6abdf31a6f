// Engine's probes: teacher-forced logits (through prefill or through decode steps) and the
// prefill / decode benchmarks. They drive the same DecodeStep as generate(), so what they
// measure and compare is the generation path itself.
#include <algorithm>

#include <fmt/format.h>

#include "fdpp/engine.h"
#include "model/model.h"
#include "runtime/decode_step.h"
#include "runtime/engine_impl.h"

namespace fdpp {

using engine_detail::Clock;
using engine_detail::ms_since;
using engine_detail::Sequence;

Result<std::vector<float>> Engine::teacher_forced_logits(const std::vector<int>& ids) {
  Impl& I = *impl_;
  FDPP_RETURN_IF_ERROR(I.check_sequence(ids));
  const int n = static_cast<int>(ids.size());
  const ModelLimits& lim = I.model->limits();
  const int V = I.cfg.vocab_size;
  std::vector<float> all(static_cast<size_t>(n) * V), rows;
  for (int start = 0; start < n; start += lim.max_tokens) {
    const int len = std::min(lim.max_tokens, n - start);
    FDPP_RETURN_IF_ERROR(I.step->prefill(/*slot=*/0, std::span<const int>(ids).subspan(start, len),
                                         start, /*all_logits=*/true));
    FDPP_RETURN_IF_ERROR(I.step->read_logits(len, rows));
    std::copy(rows.begin(), rows.end(), all.begin() + static_cast<size_t>(start) * V);
  }
  return all;
}

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
    FDPP_RETURN_IF_ERROR(I.step->prefill(static_cast<int>(i), std::span<const int>(seqs[i]).first(1)));
    FDPP_RETURN_IF_ERROR(I.step->read_logits(1, out[i]));
  }
  for (size_t t = 1; t < longest; ++t) {
    std::vector<size_t> active;
    for (size_t i = 0; i < seqs.size(); ++i)
      if (seqs[i].size() > t) active.push_back(i);
    const int B = static_cast<int>(active.size());
    std::vector<DecodeRow> step_rows(B);
    for (int b = 0; b < B; ++b)
      step_rows[b] = {static_cast<int>(active[b]), seqs[active[b]][t], static_cast<int>(t)};
    FDPP_RETURN_IF_ERROR(I.step->decode(step_rows));
    FDPP_RETURN_IF_ERROR(I.step->read_logits(B, rows));
    for (int b = 0; b < B; ++b)
      out[active[b]].insert(out[active[b]].end(), rows.begin() + size_t(b) * V, rows.begin() + size_t(b + 1) * V);
  }
  return out;
}

// ---- benchmarking -------------------------------------------------------------
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
  std::vector<DecodeRow> rows(batch);
  std::vector<double> ms;
  for (int step = 0; static_cast<int>(ms.size()) < steps; ++step) {
    const int pos = prompt_len + step;
    if (pos + 1 > lim.context) return OutOfRange("benchmark_decode: the context filled up before the timed steps");
    for (int b = 0; b < batch; ++b) rows[b] = {b, token, pos};
    const int bucket = I.step->length_bucket(pos + 1);
    // A step that warms up or captures its graph is run but not timed (graph keys
    // change when the length crosses a bucket boundary).
    const bool timed = I.step->graphs_enabled() ? I.step->replays(batch, bucket) : step >= 2;
    FDPP_RETURN_IF_ERROR(I.backend->synchronize());
    const auto t0 = Clock::now();
    FDPP_RETURN_IF_ERROR(I.step->decode(rows));
    if (timed && static_cast<int>(ms.size()) < steps) ms.push_back(ms_since(t0));
    token = I.step->next_id(0);
  }
  return ms;
}

}  // namespace fdpp
