// DecodeStep: one batched forward of the model and what surrounds it, as a scheduler drives
// it. A prefill writes one sequence's prompt into its KV-cache slot; a decode step runs one
// token for each of up to max_batch sequences, each at its own position. Between steps
// sequences may join (a prefill into a free slot) or leave (their slot is simply not
// named again): that is the boundary continuous batching needs.
//
// It owns the packing of Model::inputs(n), the decode graphs keyed by (batch size, length
// bucket) (graph_bucket.h) and the unified-softmax row counting of decode steps (a graph
// replay runs no host code). Sampling, stop strings and EOS stay with the caller.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "fdpp/status.h"

namespace fdpp {

class Model;

// One sequence's row of a decode step: `token` goes in at `position` of `slot`'s cache and
// attends to positions 0..position (its length is position + 1).
struct DecodeRow {
  int slot = 0;
  int token = 0;
  int position = 0;
};

// Logits rows of any activation dtype, as floats on the host.
Status read_logits(Backend& be, const Tensor& logits, std::vector<float>& out);

class DecodeStep {
 public:
  // use_graphs: capture and replay decode steps (only where the backend supports graphs).
  DecodeStep(Model& model, bool use_graphs);

  // The prompt `tokens` of the sequence in `slot`, at positions start_pos, start_pos + 1, ...,
  // in chunks of limits().max_tokens rows. Afterwards the logits of the last token are row 0
  // (or, all_logits, the last chunk's rows: a caller that wants every row passes one chunk).
  Status prefill(int slot, std::span<const int> tokens, int start_pos = 0, bool all_logits = false);
  // After prefill(): the argmax id of the last token (a download and a synchronize).
  Result<int> prefill_argmax();

  // One decode step of rows.size() (1..max_batch) sequences; waits for it to finish. The
  // argmax of every row is downloaded inside the step: next_id(b).
  Status decode(std::span<const DecodeRow> rows);
  int next_id(int row) const;

  // The logits of the last forward's first `rows` rows, as floats on the host.
  Status read_logits(int rows, std::vector<float>& out) const;

  // The graph key's length part: the bucket of the longest row's length.
  int length_bucket(int max_length) const;
  bool graphs_enabled() const { return use_graphs_; }
  // Whether a decode step of this key replays a captured graph (not warmed up or captured).
  bool replays(int batch, int bucket) const { return graphs_.count({batch, bucket}) > 0; }
  // Drops every captured graph (they keep the GEMM plan and softmax mode they were captured
  // with); the next step of each key runs eagerly again before it is re-captured.
  void forget_graphs();

  Model& model() { return model_; }

 private:
  Status run(int batch, int bucket);

  Model& model_;
  bool use_graphs_ = false;
  // Decode graphs by (batch size, length bucket); a key is captured on its second
  // use, after an eager run has created every lazily built library handle.
  std::map<std::pair<int, int>, std::unique_ptr<StepGraph>> graphs_;
  std::set<std::pair<int, int>> warmed_;
};

}  // namespace fdpp
