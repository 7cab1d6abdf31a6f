// The transformers reference shipped with stories260K (models/stories260K/reference):
// the greedy continuation of "Once upon a time" and the fp32 logits along it.
#pragma once

#include <string>
#include <vector>

namespace fdpp::test {

struct StoriesReference {
  std::vector<int> prompt_ids;  // [1, 403, 407, 261, 378]
  std::vector<int> sequence;    // BOS + greedy_ids: 65 tokens, positions 0..64
  std::string text;             // the greedy text, prompt included
  std::vector<float> logits;    // (64, 512): row r after feeding sequence[0..r]
};

// Reads once_upon_a_time.json and logits_once_upon_a_time.f32 under models_dir().
StoriesReference load_stories_reference();

}  // namespace fdpp::test
