// The forward steps every architecture shares: the pass checks, and RoPE + KV append +
// attention (prefill or decode) of one layer. The architectures differ around them
// (norms, biases, MLP, positions), not in how a layer reads and writes its cache.
#include <cmath>

#include <fmt/format.h>

#include "model/model.h"

namespace fdpp {

Status Model::check_pass(const ForwardPass& pass) const {
  const int T = pass.n_tokens;
  const bool prefill = pass.kind == ForwardPass::Kind::kPrefill;
  if (T < 1 || T > limits_.max_tokens || (!prefill && T > limits_.max_batch))
    return InvalidArgument(fmt::format(
        "forward: {} tokens exceed the limits (max_tokens {}, max_batch {})", T,
        limits_.max_tokens, limits_.max_batch));
  if (prefill && (pass.start_pos < 0 || pass.start_pos + T > limits_.context))
    return OutOfRange(fmt::format("forward: positions {}..{} exceed the context of {}",
                                  pass.start_pos, pass.start_pos + T - 1, limits_.context));
  return Status::Ok();
}

Status Model::rope_append_attend(const ForwardPass& pass, int layer, const Tensor& qkv,
                                 const Tensor& q, const Tensor& out) {
  const int T = pass.n_tokens;
  RopeAppendArgs rope;
  rope.qkv = qkv;                         // (T, qkv_dim)
  rope.positions = positions(T);
  rope.slots = slots(T);
  rope.inv_freq = inv_freq_;              // (rotary_dim/2); empty without RoPE
  rope.rotary_dim = cfg_.rotary_dim();    // 0 (learned positions): append without rotating
  rope.interleaved = cfg_.rope.interleaved;
  rope.cache = &cache_;
  rope.layer = layer;
  rope.q_out = q;                         // (T, n_heads, head_dim)
  FDPP_RETURN_IF_ERROR(backend_.rope_and_append_kv(rope));

  const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
  if (pass.kind == ForwardPass::Kind::kPrefill) {
    AttentionPrefillArgs a;
    a.q = q;
    a.cache = &cache_;
    a.layer = layer;
    a.slot = pass.slot;
    a.start_pos = pass.start_pos;
    a.scale = scale;
    a.out = out;
    a.softmax = softmax_.args(layer, /*decode=*/false);
    a.stats = softmax_.stats_args(layer, T);
    // Prefill never runs inside a graph, so its rows are counted here (decode: by the engine).
    if (layer == 0) softmax_.count_rows(/*decode=*/false, int64_t{T} * cfg_.num_heads);
    return backend_.attention_prefill(a);
  }
  AttentionDecodeArgs a;
  a.q = q;
  a.cache = &cache_;
  a.layer = layer;
  a.slots = slots(T);
  a.lengths = lengths(T);
  a.max_length = pass.max_length;
  a.scale = scale;
  a.out = out;
  a.softmax = softmax_.args(layer, /*decode=*/true);
  return backend_.attention_decode(a);
}

}  // namespace fdpp
