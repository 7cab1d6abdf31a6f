// fdpp info: what a model folder holds and what running it costs, without
// loading the weights.
#include <cstdio>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fdpp/model_info.h"

namespace fdpp::cli {
namespace {

struct InfoOptions {
  std::string model;
  int ctx = 0;
  bool json = false;
};

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

int run_info(const InfoOptions& o) {
  auto info = read_model_info(o.model);
  if (!info.ok()) return fail(info.status());
  const ModelSummary& c = info->model;
  const int ctx = o.ctx > 0 ? o.ctx : c.max_position_embeddings;
  const double kv_bytes_per_token = info->kv_cache_bytes_per_token_fp16;

  if (o.json) {
    nlohmann::json j;
    j["architecture"] = c.architecture;
    j["model_type"] = c.model_type;
    j["layers"] = c.layers;
    j["hidden_size"] = c.hidden_size;
    j["intermediate_size"] = c.intermediate_size;
    j["heads"] = c.heads;
    j["kv_heads"] = c.kv_heads;
    j["head_dim"] = c.head_dim;
    j["rotary_dim"] = c.rotary_dim;
    j["vocab_size"] = c.vocab_size;
    j["max_position_embeddings"] = c.max_position_embeddings;
    j["parameters"] = info->parameters;
    j["checkpoint_tensors"] = info->checkpoint_tensors;
    j["checkpoint_bytes"] = info->checkpoint_bytes;
    j["checkpoint_dtypes"] = info->checkpoint_dtypes;
    j["weight_bytes_fp16"] = info->weight_bytes_fp16;
    j["kv_cache_bytes_per_token_fp16"] = kv_bytes_per_token;
    nlohmann::json gs = nlohmann::json::array();
    for (const auto& s : info->gemm_shapes)
      gs.push_back({{"name", s.name}, {"n", s.n}, {"k", s.k}, {"count", s.count}});
    j["gemm_shapes"] = gs;
    std::puts(j.dump(1).c_str());
    return 0;
  }
  std::string dtypes;
  for (const auto& [d, n] : info->checkpoint_dtypes)
    dtypes += fmt::format("{}{} x{}", dtypes.empty() ? "" : ", ", d, n);
  fmt::print("model          {}\n", o.model);
  fmt::print("architecture   {} (model_type {})\n", c.architecture, c.model_type);
  fmt::print("layers         {}, hidden {}, intermediate {}\n", c.layers, c.hidden_size, c.intermediate_size);
  const std::string positions =
      c.learned_positions
          ? std::string("learned positions")
          : fmt::format("rotary {}{} ({}), theta {}", c.rotary_dim,
                        c.rope_interleaved ? " interleaved" : "", c.rope_type, c.rope_theta);
  fmt::print("attention      {} heads, {} KV heads (group {}), head_dim {}, {}\n", c.heads,
             c.kv_heads, c.heads / c.kv_heads, c.head_dim, positions);
  fmt::print("blocks         {}-{}, {} MLP ({}), biases: qkv {} o {} mlp {}\n",
             c.norm_before ? "pre" : "post", c.norm,
             c.gated_mlp ? "gated" : "plain", c.hidden_act, c.attention_bias ? "yes" : "no",
             c.o_bias ? "yes" : "no", c.mlp_bias ? "yes" : "no");
  fmt::print("vocab          {}, max positions {}, tied embeddings {}\n", c.vocab_size,
             c.max_position_embeddings, c.tie_word_embeddings ? "yes" : "no");
  fmt::print("parameters     {} ({})\n", human_count(info->parameters), info->parameters);
  fmt::print("checkpoint     {} tensors, {} ({})\n", info->checkpoint_tensors,
             gib(info->checkpoint_bytes), dtypes);
  fmt::print("memory         weights {} in fp16/bf16, {} in fp32; KV cache {} KiB per token, {} at ctx {}\n",
             gib(info->weight_bytes_fp16), gib(info->weight_bytes_fp32),
             kv_bytes_per_token / 1024, gib(kv_bytes_per_token * ctx), ctx);
  fmt::print("GEMM shapes    y[M,N] = x[M,K] · W[N,K]ᵀ\n");
  for (const auto& s : info->gemm_shapes)
    fmt::print("  {:<11} N {:>6}  K {:>6}  x{}\n", s.name, s.n, s.k, s.count);
  return 0;
}

}  // namespace

void add_info(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* sub = app.add_subcommand("info", "architecture, size, memory and GEMM shapes of a model");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder")->required();
  sub->add_option("-c,--ctx", o->ctx, "context for the KV-cache estimate; 0 is the model's maximum")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  sub->add_flag("--json", o->json, "print JSON");
  sub->callback([o, &exit_code] { exit_code = run_info(*o); });
}

}  // namespace fdpp::cli
