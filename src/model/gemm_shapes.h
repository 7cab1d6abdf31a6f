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

// The shapes of `c`, with the prologues of its family's forward (its gemm_shapes).
std::vector<GemmShape> gemm_shapes(const ModelConfig& c);

// The shapes of any family's linear layers, given the prologue its forward fuses before the
// norm-fed GEMMs (qkv, gate_up, and the LM head when there is a final norm) and before
// down (the gate); fc1 and fc2 of an ungated MLP take none.
std::vector<GemmShape> linear_gemm_shapes(const ModelConfig& c, LinearPrologue::Kind norm,
                                          LinearPrologue::Kind gate);

}  // namespace fdpp
