#include "runtime/decode_step.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/half.h"
#include "model/model.h"
#include "runtime/graph_bucket.h"

namespace fdpp {

Status read_logits(Backend& be, const Tensor& logits, std::vector<float>& out) {
  out.resize(logits.numel());
  if (logits.dtype == DType::kF32) return be.copy_to_host(logits, out.data());
  std::vector<uint16_t> raw(logits.numel());
  FDPP_RETURN_IF_ERROR(be.copy_to_host(logits, raw.data()));
  const bool bf16 = logits.dtype == DType::kBF16;
  for (size_t i = 0; i < raw.size(); ++i) out[i] = bf16 ? bf16_to_f32(raw[i]) : f16_to_f32(raw[i]);
  return Status::Ok();
}

DecodeStep::DecodeStep(Model& model, bool use_graphs)
    : model_(model), use_graphs_(use_graphs && model.backend().supports_graphs()) {}

Status DecodeStep::prefill(int slot, std::span<const int> tokens, int start_pos, bool all_logits) {
  const int n = static_cast<int>(tokens.size());
  const int chunk = model_.limits().max_tokens;
  for (int start = 0; start < n; start += chunk)
    FDPP_RETURN_IF_ERROR(model_.prefill_chunk(tokens.data() + start, std::min(chunk, n - start),
                                              slot, start_pos + start, all_logits));
  return Status::Ok();
}

Result<int> DecodeStep::prefill_argmax() {
  FDPP_RETURN_IF_ERROR(model_.download_next_ids(1));
  FDPP_RETURN_IF_ERROR(model_.backend().synchronize());
  return model_.inputs(1).next_ids[0];
}

int DecodeStep::next_id(int row) const { return model_.inputs(1).next_ids[row]; }

Status DecodeStep::read_logits(int rows, std::vector<float>& out) const {
  return fdpp::read_logits(model_.backend(), model_.logits(rows), out);
}

int DecodeStep::length_bucket(int max_length) const {
  return decode_length_bucket(max_length, model_.limits().context);
}

void DecodeStep::forget_graphs() {
  graphs_.clear();
  warmed_.clear();
}

Status DecodeStep::decode(std::span<const DecodeRow> rows) {
  const int B = static_cast<int>(rows.size());
  if (B < 1 || B > model_.limits().max_batch)
    return InvalidArgument(fmt::format("decode: {} rows for a max batch of {}", B,
                                       model_.limits().max_batch));
  const StepInputs in = model_.inputs(B);
  int max_len = 0;
  for (int b = 0; b < B; ++b) {
    in.ids[b] = rows[b].token;
    in.positions[b] = rows[b].position;
    in.slots[b] = rows[b].slot;
    in.lengths[b] = rows[b].position + 1;
    max_len = std::max(max_len, rows[b].position + 1);
  }
  return run(B, length_bucket(max_len));
}

Status DecodeStep::run(int batch, int bucket) {
  Backend& backend = model_.backend();
  // Each call runs one step (eagerly, or captured then replayed); a replay runs no host code,
  // so the unified softmax's rows are counted here.
  model_.softmax().count_rows(/*decode=*/true, int64_t{batch} * model_.config().num_heads);
  auto eager = [&]() -> Status {
    FDPP_RETURN_IF_ERROR(model_.upload_inputs(batch, batch));
    ForwardPass pass;
    pass.kind = ForwardPass::Kind::kDecode;
    pass.n_tokens = batch;
    pass.max_length = bucket;
    FDPP_RETURN_IF_ERROR(model_.forward(pass));
    return model_.download_next_ids(batch);
  };
  const auto key = std::make_pair(batch, bucket);
  if (!use_graphs_ || !warmed_.count(key)) {
    warmed_.insert(key);
    FDPP_RETURN_IF_ERROR(eager());
    return backend.synchronize();
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    FDPP_RETURN_IF_ERROR(backend.begin_capture());
    Status captured = eager();
    auto graph = backend.end_capture();  // always end the capture, even after a failed op
    FDPP_RETURN_IF_ERROR(captured);
    if (!graph.ok()) return graph.status();
    it = graphs_.emplace(key, std::move(graph).value()).first;
  }
  FDPP_RETURN_IF_ERROR(it->second->replay());
  return backend.synchronize();
}

}  // namespace fdpp
