#include "model/model.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include <fmt/format.h>

#include "model/families/registry.h"

namespace fdpp {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Saturating: a --ctx or --batch of any int (with the config's dims) can reach past 2^64
// bytes, and a size that saturates must still be refused by the free-memory check rather
// than wrap to something small.
size_t mul_sat(std::initializer_list<size_t> factors) {
  size_t r = 1;
  for (size_t f : factors)
    if (__builtin_mul_overflow(r, f, &r)) return SIZE_MAX;
  return r;
}
size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

}  // namespace

size_t MemoryPlan::total() const {
  return add_sat(add_sat(weight_bytes, kv_cache_bytes), activation_bytes);
}

MemoryPlan plan_memory(const ModelConfig& c, DType dtype, const ModelLimits& lim) {
  const auto u = [](int64_t v) { return static_cast<size_t>(std::max<int64_t>(v, 0)); };
  MemoryPlan p;
  p.weight_bytes = weight_totals(c, dtype).bytes;
  p.kv_cache_bytes = mul_sat({2, u(c.num_layers), u(lim.max_batch), u(c.num_kv_heads),
                              u(lim.context), u(c.head_dim), dtype_size(dtype)});
  // Parse-time limits keep one row's elements far inside 64 bits.
  const size_t row_elems = 2 * u(c.hidden_size) + u(c.qkv_dim()) +
                           2 * u(c.num_heads) * u(c.head_dim) + 3 * u(c.intermediate_size) +
                           u(c.vocab_size);
  const size_t act = mul_sat({row_elems, u(lim.max_tokens), dtype_size(dtype)});
  p.activation_bytes = act > SIZE_MAX - 17 * kAlign ? SIZE_MAX : align_up(act) + 16 * kAlign;
  return p;
}

Result<std::unique_ptr<Model>> Model::create(const ModelConfig& cfg, const SafetensorsModel& st,
                                             Backend& backend, const ModelLimits& limits) {
  if (limits.context < 1 || limits.max_batch < 1 || limits.max_tokens < limits.max_batch)
    return InvalidArgument(fmt::format("bad model limits: context {}, max_batch {}, max_tokens {}",
                                       limits.context, limits.max_batch, limits.max_tokens));
  // Learned positions end at the table: there is nothing to extrapolate with.
  if (cfg.position == PositionKind::kLearned && limits.context > cfg.max_position_embeddings)
    return OutOfRange(fmt::format("context {} exceeds the {} positions {} has learned "
                                  "(max_position_embeddings); lower --ctx",
                                  limits.context, cfg.max_position_embeddings, cfg.model_type));
  std::unique_ptr<Model> m = model_family(cfg.arch).make_model(cfg, backend, limits);
  FDPP_ASSIGN_OR_RETURN(m->weights_, load_weights(cfg, st, backend));
  FDPP_RETURN_IF_ERROR(m->allocate_buffers());
  return m;
}

Status Model::allocate_buffers() {
  const DType act = backend_.activation_dtype();
  const Device dev = backend_.device();
  const int64_t T = limits_.max_tokens, B = limits_.max_batch;

  KVCacheLayout layout;
  layout.n_layers = cfg_.num_layers;
  layout.n_slots = limits_.max_batch;
  layout.n_kv_heads = cfg_.num_kv_heads;
  layout.capacity = limits_.context;
  layout.head_dim = cfg_.head_dim;
  FDPP_ASSIGN_OR_RETURN(cache_, backend_.alloc_kv_cache(layout));
  FDPP_RETURN_IF_ERROR(softmax_.allocate(backend_, cfg_.num_layers, cfg_.num_heads,
                                         limits_.max_batch, limits_.max_tokens));

  // Inputs: the packed ids, positions, slots and lengths of one forward (inputs(n): at most
  // 3·T + B entries), next_ids per token, then inv_freq (device only).
  const std::vector<float> inv_freq = rope_inv_freq(cfg_);
  const size_t input_bytes = (4 * T + B) * sizeof(int32_t) + inv_freq.size() * sizeof(float);
  FDPP_ASSIGN_OR_RETURN(host_inputs_, backend_.alloc_host(input_bytes));
  FDPP_ASSIGN_OR_RETURN(device_inputs_, backend_.alloc(input_bytes));
  auto* d = static_cast<int32_t*>(device_inputs_.data());
  host_next_ids_ = static_cast<int32_t*>(host_inputs_.data()) + 3 * T + B;
  next_ids_ = Tensor(d + 3 * T + B, DType::kI32, dev, {T});
  inv_freq_ = Tensor(d + 4 * T + B, DType::kF32, dev, {static_cast<int64_t>(inv_freq.size())});
  FDPP_RETURN_IF_ERROR(backend_.copy_from_host(inv_freq.data(), inv_freq_));

  const int64_t H = cfg_.hidden_size, F = cfg_.intermediate_size;
  const std::pair<Tensor*, Shape> acts[] = {
      {&x_, {T, H}},
      {&h_, {T, H}},
      {&qkv_, {T, cfg_.qkv_dim()}},
      {&q_, {T, cfg_.num_heads, cfg_.head_dim}},
      {&attn_, {T, cfg_.num_heads, cfg_.head_dim}},
      {&gate_up_, {T, 2 * F}},
      {&act_, {T, F}},
      {&logits_, {T, cfg_.vocab_size}},
  };
  size_t total = 0;
  for (const auto& [t, shape] : acts) total += align_up(static_cast<size_t>(shape.numel()) * dtype_size(act));
  FDPP_ASSIGN_OR_RETURN(activations_, backend_.alloc(total));
  size_t off = 0;
  for (const auto& [t, shape] : acts) {
    *t = Tensor(static_cast<char*>(activations_.data()) + off, act, dev, shape);
    off += align_up(static_cast<size_t>(shape.numel()) * dtype_size(act));
  }
  return backend_.synchronize();
}

StepInputs Model::inputs(int n_tokens) const {
  // Packed for this n (3·n + n_seqs entries from the start): see StepInputs.
  auto* h = static_cast<int32_t*>(host_inputs_.data());
  const int n = std::clamp(n_tokens, 0, limits_.max_tokens);
  return {h, h + n, h + 2 * n, h + 3 * n, host_next_ids_};
}

Tensor Model::packed_input(int64_t offset, int64_t n) const {
  return Tensor(static_cast<int32_t*>(device_inputs_.data()) + offset, DType::kI32,
                device_inputs_.device(), {n});
}

Status Model::upload_inputs(int n_tokens, int n_seqs) {
  if (n_tokens < 1 || n_tokens > limits_.max_tokens || n_seqs < 0 || n_seqs > limits_.max_batch ||
      n_seqs > n_tokens)
    return InvalidArgument(fmt::format("upload_inputs: {} tokens / {} sequences exceed the limits {} / {}",
                                       n_tokens, n_seqs, limits_.max_tokens, limits_.max_batch));
  const int64_t n = 3 * int64_t{n_tokens} + n_seqs;  // inputs(n_tokens), lengths included
  return backend_.copy_from_host(host_inputs_.data(), packed_input(0, n));
}

Status Model::prefill_chunk(const int* ids, int n_tokens, int slot, int start_pos,
                            bool all_logits) {
  if (n_tokens < 1 || n_tokens > limits_.max_tokens)
    return InvalidArgument(fmt::format("prefill_chunk: {} tokens outside [1, {}]", n_tokens,
                                       limits_.max_tokens));
  const StepInputs in = inputs(n_tokens);
  for (int t = 0; t < n_tokens; ++t) {
    in.ids[t] = ids[t];
    in.positions[t] = start_pos + t;
    in.slots[t] = slot;
  }
  FDPP_RETURN_IF_ERROR(upload_inputs(n_tokens, 0));
  ForwardPass pass;
  pass.kind = ForwardPass::Kind::kPrefill;
  pass.n_tokens = n_tokens;
  pass.slot = slot;
  pass.start_pos = start_pos;
  pass.all_logits = all_logits;
  return forward(pass);
}

Status Model::download_next_ids(int rows) {
  return backend_.copy_to_host_async(next_ids_.rows(0, rows), host_next_ids_);
}

}  // namespace fdpp
