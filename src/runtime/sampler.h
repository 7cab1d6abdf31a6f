// Token sampling on the host: greedy, or temperature -> top-k -> top-p -> draw.
// Random numbers are splitmix64 bits turned into doubles by hand, not <random>'s
// distributions (whose output differs between standard libraries), so a seed
// gives the same text on every platform.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fdpp/engine.h"

namespace fdpp {

class Sampler {
 public:
  Sampler(const SamplingParams& params, uint64_t stream);

  bool greedy() const { return params_.temperature <= 0.0f; }
  // Picks a token from one row of logits (vocab floats).
  int sample(std::span<const float> logits);

  // Uniform in [0, 1) with 53 random bits.
  double uniform();

 private:
  SamplingParams params_;
  uint64_t state_;
  std::vector<std::pair<float, int>> candidates_;  // scratch (vocab)
};

// The lowest index of the largest value; NaN never wins.
int argmax(std::span<const float> logits);

}  // namespace fdpp
