// The distinct linear-layer shapes [N, K] of a model (y[M,N] = x[M,K]·W[N,K]ᵀ):
// per Llama layer only QKV, O, gate|up and down, plus the LM head. The flat-GEMM
// tuning and the dispatch table are keyed by these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace fdpp {

struct GemmShape {
  std::string name;  // "qkv", "o", "gate_up", "down", "lm_head"
  int64_t n = 0;
  int64_t k = 0;
  int count = 0;  // how many weights of this shape one forward multiplies by
};

inline std::vector<GemmShape> gemm_shapes(const ModelConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size;
  return {
      {"qkv", c.qkv_dim(), H, c.num_layers},
      {"o", H, static_cast<int64_t>(c.num_heads) * c.head_dim, c.num_layers},
      {"gate_up", 2 * F, H, c.num_layers},
      {"down", H, F, c.num_layers},
      {"lm_head", c.vocab_size, H, 1},
  };
}

}  // namespace fdpp
