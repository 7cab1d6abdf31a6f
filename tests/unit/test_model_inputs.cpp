// Model::inputs(n) and upload_inputs: the step's inputs packed per forward (model.h), on the
// CPU backend with the trained tiny Llama. The end-to-end tests cover the values a forward
// reads (chunked prefill, shrinking decode batches); this pins the layout and the refusals.
#include <gtest/gtest.h>

#include <memory>

#include "backend/backend.h"
#include "common/test_util.h"
#include "model/config.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace fdpp {
namespace {

class ModelInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto dir = test::models_dir() / "stories260K";
    auto cfg = load_model_config(dir);
    ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
    auto st = SafetensorsModel::open(dir);
    ASSERT_TRUE(st.ok()) << st.status().to_string();
    backend_ = make_cpu_backend();
    ModelLimits lim;
    lim.context = 64;
    lim.max_batch = 4;
    lim.max_tokens = 16;
    auto model = Model::create(*cfg, *st, *backend_, lim);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = std::move(model).value();
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
};

TEST_F(ModelInputs, ArraysArePackedBackToBackForEachTokenCount) {
  for (int n : {1, 3, 16}) {
    const StepInputs in = model_->inputs(n);
    EXPECT_EQ(in.positions, in.ids + n) << n;
    EXPECT_EQ(in.slots, in.ids + 2 * n) << n;
    EXPECT_EQ(in.lengths, in.ids + 3 * n) << n;
  }
  // next_ids does not move with n, and lies past the largest packed block (3·16 + 4).
  EXPECT_EQ(model_->inputs(1).next_ids, model_->inputs(16).next_ids);
  EXPECT_GE(model_->inputs(1).next_ids, model_->inputs(16).ids + 3 * 16 + 4);
}

TEST_F(ModelInputs, UploadRefusesCountsOutsideTheLimits) {
  EXPECT_TRUE(model_->upload_inputs(3, 3).ok());
  EXPECT_TRUE(model_->upload_inputs(16, 0).ok());
  EXPECT_FALSE(model_->upload_inputs(0, 0).ok());    // nothing to upload
  EXPECT_FALSE(model_->upload_inputs(17, 0).ok());   // past max_tokens
  EXPECT_FALSE(model_->upload_inputs(3, 4).ok());    // more lengths than tokens
  EXPECT_FALSE(model_->upload_inputs(16, 5).ok());   // past max_batch
  EXPECT_FALSE(model_->upload_inputs(2, -1).ok());
}

}  // namespace
}  // namespace fdpp
