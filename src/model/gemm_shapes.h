// The distinct linear-layer shapes [N, K] of a model (y[M,N] = x[M,K]·W[N,K]ᵀ):
// per layer only QKV, O and the two MLP projections (gate|up and down; OPT's fc1
// and fc2), plus the LM head and OPT's project_in / project_out. The flat-GEMM
// tuning and the dispatch table are keyed by these; each names the prologue the model
// applies to x first (fused into the CUDA GEMV at batch 1), which the tuner times with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace fdpp {

struct GemmShape {
  std::string name;  // "qkv", "o", "gate_up" | "fc1", "down" | "fc2", "lm_head", ...
  int64_t n = 0;
  int64_t k = 0;
  int count = 0;  // how many weights of this shape one forward multiplies by
  // What the model applies to x before this GEMM through Backend::fused_linear (LlamaModel:
  // the norms before qkv, gate_up and the LM head, the SiLU gate before down; OPT: none).
  LinearPrologue::Kind prologue = LinearPrologue::Kind::kNone;
};

inline std::vector<GemmShape> gemm_shapes(const ModelConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size, E = c.token_dim();
  const int L = c.num_layers;
  using Kind = LinearPrologue::Kind;
  const bool llama = c.arch != Architecture::kOpt;  // LlamaModel: Llama and ChatGLM2
  const Kind norm = llama ? Kind::kRmsNorm : Kind::kNone;
  std::vector<GemmShape> s = {
      {"qkv", c.qkv_dim(), H, L, norm},
      {"o", H, static_cast<int64_t>(c.num_heads) * c.head_dim, L},
  };
  if (c.gated_mlp) {
    s.push_back({"gate_up", 2 * F, H, L, norm});
    s.push_back({"down", H, F, L, llama ? Kind::kSiluMul : Kind::kNone});
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
