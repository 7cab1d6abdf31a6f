#include "model/weights.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "model/weight_specs.h"

namespace fdpp {
namespace {

constexpr size_t kSlotAlign = 256;  // keeps every weight 16-byte (and cache-line) aligned for vector loads

// Where each fdpp weight name lands in ModelWeights / LayerWeights.
constexpr std::pair<const char*, Tensor ModelWeights::*> kModelFields[] = {
    {"embed", &ModelWeights::embed},
    {"pos_embed", &ModelWeights::pos_embed},
    {"project_in", &ModelWeights::project_in},
    {"project_out", &ModelWeights::project_out},
    {"final_norm", &ModelWeights::final_norm},
    {"final_norm_bias", &ModelWeights::final_norm_bias},
    {"lm_head", &ModelWeights::lm_head},
};
constexpr std::pair<const char*, Tensor LayerWeights::*> kLayerFields[] = {
    {"attn_norm", &LayerWeights::attn_norm}, {"attn_norm_bias", &LayerWeights::attn_norm_bias},
    {"qkv", &LayerWeights::qkv},             {"qkv_bias", &LayerWeights::qkv_bias},
    {"o", &LayerWeights::o},                 {"o_bias", &LayerWeights::o_bias},
    {"ffn_norm", &LayerWeights::ffn_norm},   {"ffn_norm_bias", &LayerWeights::ffn_norm_bias},
    {"gate_up", &LayerWeights::gate_up},     {"gate_up_bias", &LayerWeights::gate_up_bias},
    {"up", &LayerWeights::up},               {"up_bias", &LayerWeights::up_bias},
    {"down", &LayerWeights::down},           {"down_bias", &LayerWeights::down_bias},
};

// Puts `t` where the weight `name` belongs; Internal for a name no field takes (a
// weight_specs entry without a home would otherwise be loaded and silently unused).
Status bind_weight(ModelWeights& w, const std::string& name, const Tensor& t) {
  for (const auto& [field, member] : kModelFields)
    if (name == field) {
      w.*member = t;
      return Status::Ok();
    }
  int layer = -1, used = 0;
  if (std::sscanf(name.c_str(), "layers.%d.%n", &layer, &used) == 1 && used > 0 && layer >= 0 &&
      layer < static_cast<int>(w.layers.size())) {
    const std::string what = name.substr(static_cast<size_t>(used));
    for (const auto& [field, member] : kLayerFields)
      if (what == field) {
        w.layers[layer].*member = t;
        return Status::Ok();
      }
  }
  return Internal(fmt::format("weight '{}' has no place in ModelWeights", name));
}

// The first of `src.names` the checkpoint has, or NotFound naming them all.
Result<const TensorInfo*> find_source(const SafetensorsModel& st, const WeightSource& src) {
  for (const std::string& n : src.names)
    if (const TensorInfo* t = st.find(n)) return t;
  std::string names;
  for (const std::string& n : src.names)
    names += fmt::format("{}'{}'", names.empty() ? "" : " or ", n);
  return NotFound(fmt::format("tensor {} is missing from the checkpoint", names));
}

}  // namespace

WeightPlan plan_weights(const ModelConfig& c, DType dtype) {
  WeightPlan plan;
  plan.dtype = dtype;
  for (WeightSpec& spec : weight_specs(c)) {
    plan.slots.push_back({std::move(spec.name), spec.shape, plan.total_bytes});
    const size_t bytes = static_cast<size_t>(spec.shape.numel()) * dtype_size(dtype);
    plan.total_bytes += (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    plan.num_params += spec.shape.numel();
  }
  return plan;
}

WeightTotals weight_totals(const ModelConfig& cfg, DType dtype) {
  ModelConfig one = cfg, two = cfg;
  one.num_layers = 1;
  two.num_layers = 2;
  const WeightPlan p1 = plan_weights(one, dtype), p2 = plan_weights(two, dtype);
  // The parser's limits (config_readers.h) keep one block under 2^52 bytes and the layer count
  // under 2^10, so these products are exact in 64 bits.
  const int64_t blocks = cfg.num_layers - 1;
  WeightTotals t;
  t.bytes = p1.total_bytes + static_cast<size_t>(blocks) * (p2.total_bytes - p1.total_bytes);
  t.params = p1.num_params + blocks * (p2.num_params - p1.num_params);
  return t;
}

Result<ModelWeights> load_weights(const ModelConfig& cfg, const SafetensorsModel& st, Backend& backend) {
  ModelWeights w;
  const std::vector<WeightSpec> specs = weight_specs(cfg);
  w.plan = plan_weights(cfg, backend.activation_dtype());
  const DType dtype = w.plan.dtype;
  FDPP_ASSIGN_OR_RETURN(w.storage, backend.alloc(w.plan.total_bytes));
  w.layers.resize(cfg.num_layers);

  size_t max_slot_bytes = 0;
  for (const WeightSlot& s : w.plan.slots)
    max_slot_bytes = std::max(max_slot_bytes, static_cast<size_t>(s.shape.numel()) * dtype_size(dtype));
  // Host staging in the target dtype; pinned on devices so the upload runs at full speed.
  FDPP_ASSIGN_OR_RETURN(Buffer staging, backend.alloc_host(max_slot_bytes));

  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    const WeightSlot& s = w.plan.slots[i];
    size_t filled = 0;
    int64_t rows = 0;
    for (const WeightSource& src : spec.sources) {
      FDPP_ASSIGN_OR_RETURN(const TensorInfo* t, find_source(st, src));
      if (t->shape != src.shape)
        return InvalidArgument(fmt::format("tensor '{}' in {} has shape {}, expected {} from config.json",
                                           t->name, t->file.filename().string(),
                                           t->shape.to_string(), src.shape.to_string()));
      // The rows from skip_rows on, as a tensor of their own (rows are contiguous).
      TensorInfo part = *t;
      if (src.skip_rows > 0) {
        const size_t row_bytes = t->nbytes / static_cast<size_t>(t->shape[0]);
        part.data += static_cast<size_t>(src.skip_rows) * row_bytes;
        part.nbytes -= static_cast<size_t>(src.skip_rows) * row_bytes;
        part.shape.dims[0] -= src.skip_rows;
      }
      FDPP_RETURN_IF_ERROR(convert_tensor(part, dtype, static_cast<char*>(staging.data()) + filled)
                               .with_context(fmt::format("loading '{}'", t->name)));
      filled += static_cast<size_t>(part.shape.numel()) * dtype_size(dtype);
      rows += part.shape[0];
    }
    // weight_specs promises that the sources fill the weight exactly.
    if (filled != static_cast<size_t>(s.shape.numel()) * dtype_size(dtype) || rows != s.shape[0])
      return Internal(fmt::format("weight '{}' {}: its sources fill {} bytes in {} rows", s.name,
                                  s.shape.to_string(), filled, rows));
    Tensor dst(static_cast<char*>(w.storage.data()) + s.offset, dtype, backend.device(), s.shape);
    FDPP_RETURN_IF_ERROR(backend.copy_from_host(staging.data(), dst));
    // The staging buffer is refilled next: wait for the (asynchronous) upload to read it.
    FDPP_RETURN_IF_ERROR(backend.synchronize());
    FDPP_RETURN_IF_ERROR(bind_weight(w, s.name, dst));
  }
  if (cfg.tie_word_embeddings) w.lm_head = w.embed;
  return w;
}

}  // namespace fdpp
