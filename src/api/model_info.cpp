// fdpp/model_info.h: fdpp info's figures, from config.json and the safetensors headers.
#include "fdpp/model_info.h"

#include "fdpp/engine.h"
#include "model/config.h"
#include "model/gemm_shapes.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace fdpp {
namespace {

ModelSummary summarize(const ModelConfig& c) {
  ModelSummary s;
  s.architecture = architecture_name(c.arch);
  s.model_type = c.model_type;
  s.layers = c.num_layers;
  s.hidden_size = c.hidden_size;
  s.intermediate_size = c.intermediate_size;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab_size = c.vocab_size;
  s.max_position_embeddings = c.max_position_embeddings;
  s.learned_positions = c.position == PositionKind::kLearned;
  s.rotary_dim = c.rotary_dim();
  s.rope_interleaved = c.rope.interleaved;
  s.rope_type = c.rope.type;
  s.rope_theta = c.rope.theta;
  s.norm_before = c.norm_before;
  s.norm = c.norm == NormKind::kLayer ? "LayerNorm" : "RMSNorm";
  s.gated_mlp = c.gated_mlp;
  s.hidden_act = c.hidden_act;
  s.attention_bias = c.attention_bias;
  s.o_bias = c.o_bias;
  s.mlp_bias = c.mlp_bias;
  s.tie_word_embeddings = c.tie_word_embeddings;
  return s;
}

}  // namespace

ModelSummary Engine::summary() const { return summarize(config()); }

Result<ModelInfo> read_model_info(const std::filesystem::path& model_dir) {
  auto cfg_or = load_model_config(model_dir);
  if (!cfg_or.ok()) return cfg_or.status();
  const ModelConfig& c = *cfg_or;
  auto st = SafetensorsModel::open(model_dir);
  if (!st.ok()) return st.status();

  ModelInfo info;
  info.model = summarize(c);
  for (const auto& t : st->tensors()) ++info.checkpoint_dtypes[t.dtype_name];
  info.checkpoint_tensors = st->size();
  info.checkpoint_bytes = st->total_bytes();
  const WeightTotals w16 = weight_totals(c, DType::kF16);
  info.parameters = w16.params;
  info.weight_bytes_fp16 = w16.bytes;
  info.weight_bytes_fp32 = weight_totals(c, DType::kF32).bytes;
  info.kv_cache_bytes_per_token_fp16 = 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * 2;  // k and v
  for (const GemmShape& s : gemm_shapes(c)) info.gemm_shapes.push_back({s.name, s.n, s.k, s.count});
  return info;
}

}  // namespace fdpp
