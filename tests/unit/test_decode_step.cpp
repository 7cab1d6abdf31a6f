// DecodeStep on the CPU with stories260K, driven by hand as a scheduler would: its greedy
// ids are Engine::generate's, its per-row logits are teacher forcing's (through decode
// steps exactly, through prefill to rounding), and a sequence may join a batch between
// steps without changing what the others compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/stories_reference.h"
#include "common/test_util.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model.h"
#include "runtime/decode_step.h"
#include "runtime/graph_bucket.h"

namespace fdpp {
namespace {

std::unique_ptr<Engine> make_engine(int max_batch = 1) {
  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.max_batch = max_batch;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Greedy continuation of `prompt` in `slot` by hand: prefill, then one decode row per token.
std::vector<int> greedy_by_hand(DecodeStep& step, int slot, const std::vector<int>& prompt, int n,
                                std::vector<std::vector<float>>* logits = nullptr) {
  std::vector<int> out;
  EXPECT_TRUE(step.prefill(slot, prompt).ok());
  auto first = step.prefill_argmax();
  EXPECT_TRUE(first.ok()) << first.status().to_string();
  if (!first.ok()) return out;
  out.push_back(*first);
  while (static_cast<int>(out.size()) < n) {
    const DecodeRow row{slot, out.back(), static_cast<int>(prompt.size() + out.size()) - 1};
    Status s = step.decode(std::span<const DecodeRow>(&row, 1));
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!s.ok()) break;
    if (logits) {
      logits->emplace_back();
      EXPECT_TRUE(step.read_logits(1, logits->back()).ok());
    }
    out.push_back(step.next_id(0));
  }
  return out;
}

TEST(DecodeStep, GreedyIdsEqualGenerate) {
  const test::StoriesReference ref = test::load_stories_reference();
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  const int n_new = static_cast<int>(ref.sequence.size() - ref.prompt_ids.size());
  auto gen = engine->generate({{ref.prompt_ids, test::greedy(n_new)}}, nullptr);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  ASSERT_EQ((*gen)[0].output_ids.size(), static_cast<size_t>(n_new));

  DecodeStep step(engine->model(), /*use_graphs=*/false);
  EXPECT_EQ(greedy_by_hand(step, 0, ref.prompt_ids, n_new), (*gen)[0].output_ids);
  // And generate is unchanged after a hand-driven step shared its model and cache.
  auto again = engine->generate({{ref.prompt_ids, test::greedy(n_new)}}, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].output_ids, (*gen)[0].output_ids);
}

TEST(DecodeStep, DecodeLogitsEqualTeacherForcing) {
  const test::StoriesReference ref = test::load_stories_reference();
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  const int V = engine->config().vocab_size;
  const int n_new = 24;
  DecodeStep step(engine->model(), /*use_graphs=*/false);
  std::vector<std::vector<float>> rows;
  const std::vector<int> out = greedy_by_hand(step, 0, ref.prompt_ids, n_new, &rows);
  ASSERT_EQ(rows.size(), static_cast<size_t>(n_new - 1));
  std::vector<int> seq = ref.prompt_ids;
  seq.insert(seq.end(), out.begin(), out.end());
  const size_t P = ref.prompt_ids.size();

  // Through decode steps: the same forward, bit for bit.
  auto tf_decode = engine->teacher_forced_logits_decode({seq});
  ASSERT_TRUE(tf_decode.ok()) << tf_decode.status().to_string();
  ASSERT_EQ((*tf_decode)[0].size(), seq.size() * V);
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t pos = P + i;  // row i fed out[i] at position P + i
    ASSERT_EQ(rows[i].size(), static_cast<size_t>(V));
    EXPECT_TRUE(std::equal(rows[i].begin(), rows[i].end(), (*tf_decode)[0].begin() + pos * V))
        << "position " << pos;
  }
  // Through prefill: the same logits up to the order of the sums.
  auto tf = engine->teacher_forced_logits(seq);
  ASSERT_TRUE(tf.ok()) << tf.status().to_string();
  float max_err = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int v = 0; v < V; ++v)
      max_err = std::max(max_err, std::abs(rows[i][v] - (*tf)[(P + i) * V + v]));
  EXPECT_LE(max_err, 1e-4f);
}

TEST(DecodeStep, SequenceJoiningBetweenStepsChangesNothing) {
  const test::StoriesReference ref = test::load_stories_reference();
  auto engine = make_engine(/*max_batch=*/2);
  ASSERT_TRUE(engine);
  const std::vector<int> a = ref.prompt_ids;
  const std::vector<int> b(ref.sequence.begin(), ref.sequence.begin() + 20);
  const int n = 16;
  DecodeStep step(engine->model(), /*use_graphs=*/false);
  const std::vector<int> solo_a = greedy_by_hand(step, 0, a, n);
  const std::vector<int> solo_b = greedy_by_hand(step, 1, b, n);
  ASSERT_EQ(solo_a.size(), static_cast<size_t>(n));
  ASSERT_EQ(solo_b.size(), static_cast<size_t>(n));

  // A decodes alone for 5 steps, then B is prefilled into slot 1 and joins: rows of
  // different slots and positions share the steps until A leaves.
  std::vector<int> out_a, out_b;
  ASSERT_TRUE(step.prefill(0, a).ok());
  auto first_a = step.prefill_argmax();
  ASSERT_TRUE(first_a.ok());
  out_a.push_back(*first_a);
  // The next row of a sequence: its newest token, at the position after the cached ones.
  auto row = [](int slot, const std::vector<int>& prompt, const std::vector<int>& out) {
    return DecodeRow{slot, out.back(), static_cast<int>(prompt.size() + out.size()) - 1};
  };
  auto row_a = [&] { return row(0, a, out_a); };
  auto row_b = [&] { return row(1, b, out_b); };
  for (int i = 0; i < 5; ++i) {
    const DecodeRow r = row_a();
    ASSERT_TRUE(step.decode(std::span<const DecodeRow>(&r, 1)).ok());
    out_a.push_back(step.next_id(0));
  }
  ASSERT_TRUE(step.prefill(1, b).ok());
  auto first_b = step.prefill_argmax();
  ASSERT_TRUE(first_b.ok());
  out_b.push_back(*first_b);
  while (static_cast<int>(out_a.size()) < n) {
    const DecodeRow rows[2] = {row_b(), row_a()};  // any row order: each row names its slot
    ASSERT_TRUE(step.decode(rows).ok());
    out_b.push_back(step.next_id(0));
    out_a.push_back(step.next_id(1));
  }
  while (static_cast<int>(out_b.size()) < n) {
    const DecodeRow r = row_b();
    ASSERT_TRUE(step.decode(std::span<const DecodeRow>(&r, 1)).ok());
    out_b.push_back(step.next_id(0));
  }
  EXPECT_EQ(out_a, solo_a);
  EXPECT_EQ(out_b, solo_b);
}

TEST(DecodeStep, RefusesBatchesOutsideTheLimits) {
  auto engine = make_engine(/*max_batch=*/2);
  ASSERT_TRUE(engine);
  DecodeStep step(engine->model(), /*use_graphs=*/false);
  EXPECT_EQ(step.decode({}).code(), StatusCode::kInvalidArgument);
  const DecodeRow rows[3] = {{0, 1, 0}, {1, 1, 0}, {1, 1, 1}};
  EXPECT_EQ(step.decode(rows).code(), StatusCode::kInvalidArgument);
}

TEST(DecodeStep, GraphKeysOnTheCpu) {
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  // The CPU backend captures nothing, whatever is asked: every step runs eagerly.
  DecodeStep step(engine->model(), /*use_graphs=*/true);
  EXPECT_FALSE(step.graphs_enabled());
  const int context = engine->model().limits().context;
  for (int len : {1, 256, 257, 511, 512, 513, context})
    EXPECT_EQ(step.length_bucket(len), decode_length_bucket(len, context)) << len;
  ASSERT_TRUE(step.prefill(0, std::vector<int>{1, 403}).ok());
  for (int pos = 2; pos < 5; ++pos) {
    const DecodeRow r{0, 403, pos};
    ASSERT_TRUE(step.decode(std::span<const DecodeRow>(&r, 1)).ok());
    EXPECT_FALSE(step.replays(1, step.length_bucket(pos + 1)));
  }
}

}  // namespace
}  // namespace fdpp
