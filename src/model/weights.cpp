#include "model/weights.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace fdpp {
namespace {

constexpr size_t kSlotAlign = 256;  // keeps every weight 16-byte (and cache-line) aligned for vector loads

// One Hugging Face tensor that fills `rows` rows of a fused fdpp weight.
struct Source {
  std::string hf_name;
  Shape shape;
};

// The Hugging Face tensors behind each fdpp weight, in row order.
std::vector<Source> sources_of(const ModelConfig& c, const std::string& slot) {
  const int64_t H = c.hidden_size, D = c.head_dim, F = c.intermediate_size;
  if (slot == "embed") return {{"model.embed_tokens.weight", {c.vocab_size, H}}};
  if (slot == "final_norm") return {{"model.norm.weight", {H}}};
  if (slot == "lm_head") return {{"lm_head.weight", {c.vocab_size, H}}};
  // "layers.<i>.<what>"
  const size_t dot = slot.find('.', 7);
  const std::string layer = slot.substr(7, dot - 7);
  const std::string what = slot.substr(dot + 1);
  const std::string p = "model.layers." + layer + ".";
  if (what == "attn_norm") return {{p + "input_layernorm.weight", {H}}};
  if (what == "ffn_norm") return {{p + "post_attention_layernorm.weight", {H}}};
  if (what == "qkv")
    return {{p + "self_attn.q_proj.weight", {c.num_heads * D, H}},
            {p + "self_attn.k_proj.weight", {c.num_kv_heads * D, H}},
            {p + "self_attn.v_proj.weight", {c.num_kv_heads * D, H}}};
  if (what == "o") return {{p + "self_attn.o_proj.weight", {H, c.num_heads * D}}};
  if (what == "gate_up")
    return {{p + "mlp.gate_proj.weight", {F, H}}, {p + "mlp.up_proj.weight", {F, H}}};
  if (what == "down") return {{p + "mlp.down_proj.weight", {H, F}}};
  return {};
}

}  // namespace

WeightPlan plan_weights(const ModelConfig& c, DType dtype) {
  WeightPlan plan;
  plan.dtype = dtype;
  const int64_t H = c.hidden_size, D = c.head_dim, F = c.intermediate_size;
  auto add = [&](std::string name, Shape shape) {
    plan.slots.push_back({std::move(name), shape, plan.total_bytes});
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
    plan.total_bytes += (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    plan.num_params += shape.numel();
  };
  add("embed", {c.vocab_size, H});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    add(p + "attn_norm", {H});
    add(p + "qkv", {c.qkv_dim(), H});
    add(p + "o", {H, c.num_heads * D});
    add(p + "ffn_norm", {H});
    add(p + "gate_up", {2 * F, H});
    add(p + "down", {H, F});
  }
  add("final_norm", {H});
  if (!c.tie_word_embeddings) add("lm_head", {c.vocab_size, H});
  return plan;
}

Result<ModelWeights> load_weights(const ModelConfig& cfg, const SafetensorsModel& st, Backend& backend) {
  ModelWeights w;
  w.plan = plan_weights(cfg, backend.activation_dtype());
  const DType dtype = w.plan.dtype;
  FDPP_ASSIGN_OR_RETURN(w.storage, backend.alloc(w.plan.total_bytes));

  size_t max_slot_bytes = 0;
  for (const WeightSlot& s : w.plan.slots)
    max_slot_bytes = std::max(max_slot_bytes, static_cast<size_t>(s.shape.numel()) * dtype_size(dtype));
  // Host staging in the target dtype; pinned on devices so the upload runs at full speed.
  FDPP_ASSIGN_OR_RETURN(Buffer staging, backend.alloc_host(max_slot_bytes));

  std::map<std::string, Tensor> bound;
  for (const WeightSlot& s : w.plan.slots) {
    size_t filled = 0;
    for (const Source& src : sources_of(cfg, s.name)) {
      const TensorInfo* t = st.find(src.hf_name);
      if (!t) return NotFound(fmt::format("tensor '{}' is missing from the checkpoint", src.hf_name));
      if (t->shape != src.shape)
        return InvalidArgument(fmt::format("tensor '{}' in {} has shape {}, expected {} from config.json",
                                           src.hf_name, t->file.filename().string(),
                                           t->shape.to_string(), src.shape.to_string()));
      FDPP_RETURN_IF_ERROR(convert_tensor(*t, dtype, static_cast<char*>(staging.data()) + filled)
                               .with_context(fmt::format("loading '{}'", src.hf_name)));
      filled += static_cast<size_t>(src.shape.numel()) * dtype_size(dtype);
    }
    Tensor dst(static_cast<char*>(w.storage.data()) + s.offset, dtype, backend.device(), s.shape);
    FDPP_RETURN_IF_ERROR(backend.copy_from_host(staging.data(), dst));
    // The staging buffer is refilled next: wait for the (asynchronous) upload to read it.
    FDPP_RETURN_IF_ERROR(backend.synchronize());
    bound[s.name] = dst;
  }

  auto get = [&](const std::string& name) { return bound.at(name); };
  w.embed = get("embed");
  w.final_norm = get("final_norm");
  w.lm_head = cfg.tie_word_embeddings ? w.embed : get("lm_head");
  w.layers.resize(cfg.num_layers);
  for (int l = 0; l < cfg.num_layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    LayerWeights& L = w.layers[l];
    L.attn_norm = get(p + "attn_norm");
    L.qkv = get(p + "qkv");
    L.o = get(p + "o");
    L.ffn_norm = get(p + "ffn_norm");
    L.gate_up = get(p + "gate_up");
    L.down = get(p + "down");
  }
  return w;
}

}  // namespace fdpp
