#include "model/model_softmax.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dispatch/softmax_range.h"

namespace fdpp {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Status ModelSoftmax::allocate(Backend& backend, int n_layers, int n_heads, int n_slots,
                              int max_tokens) {
  backend_ = &backend;
  n_layers_ = n_layers;
  n_heads_ = n_heads;
  n_slots_ = n_slots;
  max_tokens_ = max_tokens;
  const int64_t L = n_layers, H = n_heads, S = n_slots;
  const size_t phi_bytes = align_up(L * H * sizeof(float));
  const size_t row_bytes = align_up(L * S * H * sizeof(float));
  FDPP_ASSIGN_OR_RETURN(state_, backend.alloc(phi_bytes + row_bytes + 2 * L * sizeof(int32_t)));
  const Device dev = backend.device();
  char* base = static_cast<char*>(state_.data());
  phi_ = Tensor(base, DType::kF32, dev, {L, H});
  row_max_ = Tensor(base + phi_bytes, DType::kF32, dev, {L, S, H});
  fallbacks_ = Tensor(base + phi_bytes + row_bytes, DType::kI32, dev, {2, L});
  const std::vector<float> nan(static_cast<size_t>(L * S * H),
                               std::numeric_limits<float>::quiet_NaN());
  FDPP_RETURN_IF_ERROR(backend.copy_from_host(nan.data(), row_max_));
  FDPP_RETURN_IF_ERROR(configure(SoftmaxSettings{}));
  return reset_counters();
}

Status ModelSoftmax::configure(const SoftmaxSettings& s) {
  const size_t n = static_cast<size_t>(n_layers_) * n_heads_;
  if (!s.phi.empty() && s.phi.size() != n)
    return InvalidArgument(fmt::format("softmax φ has {} values, the model needs {} layers × {} "
                                       "heads = {}",
                                       s.phi.size(), n_layers_, n_heads_, n));
  std::vector<float> phi = s.phi.empty() ? std::vector<float>(n, 0.f) : s.phi;
  for (size_t i = 0; i < phi.size(); ++i)
    if (!std::isfinite(phi[i]))
      return InvalidArgument(fmt::format("softmax φ of layer {} head {} is {}", i / n_heads_,
                                         i % n_heads_, phi[i]));
  settings_ = s;
  settings_.phi = phi;
  FDPP_RETURN_IF_ERROR(backend_->copy_from_host(phi.data(), phi_));
  return backend_->synchronize();  // `phi` (host) dies here
}

AttentionSoftmaxArgs ModelSoftmax::args(int layer, bool decode) const {
  AttentionSoftmaxArgs a;
  a.mode = decode ? settings_.decode : settings_.prefill;
  a.phi = phi_.rows(layer, layer + 1).view({n_heads_});
  a.follow = decode && settings_.follow;
  a.row_max = row_max_.rows(layer, layer + 1).view({n_slots_, n_heads_});
  const int64_t at = (decode ? 1 : 0) * static_cast<int64_t>(n_layers_) + layer;
  a.fallbacks = fallbacks_.view({2 * static_cast<int64_t>(n_layers_)}).rows(at, at + 1);
  return a;
}

void ModelSoftmax::count_rows(bool decode, int64_t rows) {
  if (decode && settings_.decode == SoftmaxMode::kUnified) decode_rows_ += rows;
  if (!decode && settings_.prefill == SoftmaxMode::kUnified) prefill_rows_ += rows;
}

Result<SoftmaxCounters> ModelSoftmax::counters() {
  std::vector<int32_t> raw(2 * static_cast<size_t>(n_layers_));
  FDPP_RETURN_IF_ERROR(backend_->copy_to_host(fallbacks_, raw.data()));
  SoftmaxCounters c;
  c.prefill_rows = prefill_rows_;
  c.decode_rows = decode_rows_;
  for (int l = 0; l < n_layers_; ++l) {
    // The device counts in 32 bits, unsigned (atomicAdd on unsigned).
    c.prefill_fallbacks.push_back(static_cast<uint32_t>(raw[l]));
    c.decode_fallbacks.push_back(static_cast<uint32_t>(raw[n_layers_ + l]));
  }
  return c;
}

Status ModelSoftmax::reset_counters() {
  const std::vector<int32_t> zeros(2 * static_cast<size_t>(n_layers_), 0);
  FDPP_RETURN_IF_ERROR(backend_->copy_from_host(zeros.data(), fallbacks_));
  prefill_rows_ = decode_rows_ = 0;
  return backend_->synchronize();
}

Status ModelSoftmax::enable_score_stats() {
  if (score_stats_enabled()) return Status::Ok();
  const int64_t L = n_layers_;
  const size_t hist_bytes = align_up(L * kScoreBins * sizeof(int32_t));
  const size_t mm_bytes = align_up(L * 2 * sizeof(float));
  const size_t rows_bytes = static_cast<size_t>(L) * max_tokens_ * n_heads_ * sizeof(float);
  FDPP_ASSIGN_OR_RETURN(stats_, backend_->alloc(hist_bytes + mm_bytes + rows_bytes));
  char* base = static_cast<char*>(stats_.data());
  const Device dev = backend_->device();
  hist_ = Tensor(base, DType::kI32, dev, {L, kScoreBins});
  minmax_ = Tensor(base + hist_bytes, DType::kF32, dev, {L, 2});
  stat_rows_ = Tensor(base + hist_bytes + mm_bytes, DType::kF32, dev, {L, max_tokens_, n_heads_});
  return clear_stats();
}

Status ModelSoftmax::clear_stats() {
  const std::vector<int32_t> zeros(static_cast<size_t>(hist_.numel()), 0);
  FDPP_RETURN_IF_ERROR(backend_->copy_from_host(zeros.data(), hist_));
  std::vector<float> mm(static_cast<size_t>(minmax_.numel()));
  for (size_t i = 0; i < mm.size(); ++i)
    mm[i] = (i % 2 == 0 ? 1.f : -1.f) * std::numeric_limits<float>::infinity();
  FDPP_RETURN_IF_ERROR(backend_->copy_from_host(mm.data(), minmax_));
  return backend_->synchronize();
}

ScoreStatsArgs ModelSoftmax::stats_args(int layer, int tokens) const {
  ScoreStatsArgs a;
  if (!score_stats_enabled()) return a;
  a.histogram = hist_.rows(layer, layer + 1).view({kScoreBins});
  a.minmax = minmax_.rows(layer, layer + 1).view({2});
  a.row_max = stat_rows_.rows(layer, layer + 1).view({max_tokens_, n_heads_}).rows(0, tokens);
  return a;
}

Result<ScoreStatsSnapshot> ModelSoftmax::take_score_stats(int tokens) {
  if (!score_stats_enabled()) return InvalidArgument("score statistics are not enabled");
  if (tokens < 0 || tokens > max_tokens_)
    return OutOfRange(fmt::format("take_score_stats: {} tokens, at most {}", tokens,
                                  max_tokens_));
  ScoreStatsSnapshot s;
  s.tokens = tokens;
  s.histogram.resize(static_cast<size_t>(hist_.numel()));
  s.minmax.resize(static_cast<size_t>(minmax_.numel()));
  FDPP_RETURN_IF_ERROR(backend_->copy_to_host(hist_, s.histogram.data()));
  FDPP_RETURN_IF_ERROR(backend_->copy_to_host(minmax_, s.minmax.data()));
  std::vector<float> rows(static_cast<size_t>(stat_rows_.numel()));
  FDPP_RETURN_IF_ERROR(backend_->copy_to_host(stat_rows_, rows.data()));
  const size_t per_layer = static_cast<size_t>(max_tokens_) * n_heads_;
  const size_t used = static_cast<size_t>(tokens) * n_heads_;
  for (int l = 0; l < n_layers_; ++l)
    s.row_max.insert(s.row_max.end(), rows.begin() + l * per_layer,
                     rows.begin() + l * per_layer + used);
  FDPP_RETURN_IF_ERROR(clear_stats());
  return s;
}

}  // namespace fdpp
