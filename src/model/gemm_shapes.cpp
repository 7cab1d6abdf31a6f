#include "model/gemm_shapes.h"

#include "model/families/registry.h"

namespace fdpp {

std::vector<GemmShape> gemm_shapes(const ModelConfig& c) {
  return model_family(c.arch).gemm_shapes(c);
}

std::vector<GemmShape> linear_gemm_shapes(const ModelConfig& c, LinearPrologue::Kind norm,
                                          LinearPrologue::Kind gate) {
  const int64_t H = c.hidden_size, F = c.intermediate_size, E = c.token_dim();
  const int L = c.num_layers;
  using Kind = LinearPrologue::Kind;
  std::vector<GemmShape> s = {
      {"qkv", c.qkv_dim(), H, L, norm},
      {"o", H, static_cast<int64_t>(c.num_heads) * c.head_dim, L},
  };
  if (c.gated_mlp) {
    s.push_back({"gate_up", 2 * F, H, L, norm});
    s.push_back({"down", H, F, L, gate});
  } else {
    s.push_back({"fc1", F, H, L});
    s.push_back({"fc2", H, F, L});
  }
  s.push_back({"lm_head", c.vocab_size, E, 1, c.final_norm ? norm : Kind::kNone});
  if (c.has_projections()) {
    s.push_back({"project_in", H, E, 1});
    s.push_back({"project_out", E, H, 1});
  }
  return s;
}

}  // namespace fdpp
