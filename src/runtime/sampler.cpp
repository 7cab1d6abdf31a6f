#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace fdpp {

Sampler::Sampler(const SamplingParams& params, uint64_t stream) : params_(params) {
  // Distinct sequences of one request batch draw from distinct streams of the same seed.
  state_ = params.seed ^ (0x9e3779b97f4a7c15ull * (stream + 1));
}

double Sampler::uniform() {
  // splitmix64: a full-period 64-bit generator whose output passes BigCrush.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int argmax(std::span<const float> logits) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(logits.size()); ++i)
    if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
  return best < 0 ? 0 : best;
}

int Sampler::sample(std::span<const float> logits) {
  if (greedy()) return argmax(logits);
  const int V = static_cast<int>(logits.size());
  candidates_.clear();
  for (int i = 0; i < V; ++i)
    if (!std::isnan(logits[i])) candidates_.emplace_back(logits[i] / params_.temperature, i);
  if (candidates_.empty()) return 0;
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  // Top-k: only the k largest survive; sorting just them keeps this O(V log k).
  size_t k = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < k) k = params_.top_k;
  std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), by_logit);
  candidates_.resize(k);

  // Softmax over the survivors, relative to the largest for stability.
  const float max_logit = candidates_[0].first;
  double sum = 0;
  for (auto& c : candidates_) {
    c.first = std::exp(c.first - max_logit);
    sum += c.first;
  }
  // Top-p: the smallest prefix (in probability order) whose mass reaches top_p.
  size_t keep = candidates_.size();
  if (params_.top_p > 0.0f && params_.top_p < 1.0f) {
    double mass = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      mass += candidates_[i].first / sum;
      if (mass >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept_sum = 0;
  for (size_t i = 0; i < keep; ++i) kept_sum += candidates_[i].first;
  double r = uniform() * kept_sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= candidates_[i].first;
    if (r < 0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;  // rounding left r at ~0
}

}  // namespace fdpp
