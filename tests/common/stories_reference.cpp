#include "common/stories_reference.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "common/test_util.h"

namespace fdpp::test {

StoriesReference load_stories_reference() {
  const auto dir = models_dir() / "stories260K" / "reference";
  auto j = nlohmann::json::parse(read_file(dir / "once_upon_a_time.json"));
  StoriesReference r;
  r.prompt_ids = j["prompt_ids"].get<std::vector<int>>();
  r.sequence = {1};
  for (int id : j["greedy_ids"]) r.sequence.push_back(id);
  r.text = j["greedy_text"].get<std::string>();
  const std::string raw = read_file(dir / "logits_once_upon_a_time.f32");
  r.logits.resize(raw.size() / 4);
  std::memcpy(r.logits.data(), raw.data(), raw.size());
  return r;
}

}  // namespace fdpp::test
