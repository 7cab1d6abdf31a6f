// fdpp bench's measurement (fdpp/bench.h): llama-bench-style prefill and decode timings, each
// decode figure set against the roofline computed from this GPU's streaming-read bandwidth,
// measured first in the same run.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "fdpp/bench.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "model/model.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace fdpp {
namespace {

BenchStat stat(const std::vector<double>& v) {
  BenchStat s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0.0;
  return s;
}

}  // namespace

Result<ModelBenchReport> bench_model(const ModelBenchOptions& o, const ModelBenchProgress& progress) {
  const std::vector<int>& bs = o.batches;
  const std::vector<int>& ps = o.prompts;
  if (bs.empty() || ps.empty()) return InvalidArgument("bench: no batch sizes or prompt lengths");
  const int max_b = *std::max_element(bs.begin(), bs.end());
  const int max_p = *std::max_element(ps.begin(), ps.end());

  EngineOptions eo = o.engine;
  eo.max_batch = max_b;
  eo.context = max_p + o.n_gen + 8;  // + the untimed warm-up steps of benchmark_decode
  eo.prefill_chunk = max_p;  // whole prompts in one forward: time to first token as a server would see it

  ModelBenchReport report;
  double read_gbs = 0;
#ifdef FDPP_HAVE_CUDA
  if (eo.device == "cuda") {
    if (!cuda::cuda_device_available())
      return Unsupported("--device cuda: no usable CUDA device (no driver, no GPU, or compute capability "
                         "below 8.0)");
    // Measured before the model takes its memory, on a buffer far larger than the L2.
    auto bw = measure_read_bandwidth();
    if (!bw.ok()) return bw.status();
    read_gbs = bw->gbs;
    if (auto info = query_device_info(0); info.ok()) report.gpu = *info;
    report.bandwidth = *bw;
  }
#endif
  auto engine_or = Engine::create(eo);
  if (!engine_or.ok()) return engine_or.status();
  Engine& engine = **engine_or;
  const ModelConfig& c = engine.config();
  const ModelWeights& w = engine.model().weights();
  const size_t elem = dtype_size(w.plan.dtype);
  // A decode step streams every weight once except the embedding table (only B rows of
  // it), which is also the LM head when tied.
  const double embed_bytes = static_cast<double>(c.vocab_size) * c.hidden_size * elem;
  const double weight_bytes = w.plan.total_bytes - (c.tie_word_embeddings ? 0.0 : embed_bytes);
  const double kv_bytes_per_pos = 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * elem;

  for (int p : ps) {
    for (int b : bs) {
      std::vector<double> prefill, step;
      for (int rep = -1; rep < o.reps; ++rep) {  // rep -1 warms up (cuBLASLt plans, graphs)
        auto pre = engine.benchmark_prefill(b, p, 1000 + rep);
        if (!pre.ok()) return pre.status();
        auto dec = engine.benchmark_decode(b, p, o.n_gen, 2000 + rep);
        if (!dec.ok()) return dec.status();
        if (rep < 0) {
          if (Status st = engine.reset_softmax_stats(); !st.ok()) return st;
          continue;
        }
        prefill.push_back(*pre);
        step.push_back(std::accumulate(dec->begin(), dec->end(), 0.0) / dec->size());
      }
      ModelBenchRow r;
      r.batch = b;
      r.prompt = p;
      r.gen = o.n_gen;
      r.prefill_ms = stat(prefill);
      r.decode_ms_per_step = stat(step);
      r.prefill_tps = b * p / (r.prefill_ms.mean * 1e-3);
      r.decode_tps = b / (r.decode_ms_per_step.mean * 1e-3);
      // Timed decode steps see lengths p+3 .. p+n+2: on average p + n/2 + 2 cached positions.
      r.step_bytes = weight_bytes + b * kv_bytes_per_pos * (p + o.n_gen / 2.0 + 2);
      r.gbs = r.step_bytes / (r.decode_ms_per_step.mean * 1e-3) / 1e9;
      if (read_gbs > 0) {
        const double floor_ms = r.step_bytes / (read_gbs * 1e9) * 1e3;
        r.roofline_pct = 100.0 * floor_ms / r.decode_ms_per_step.mean;
        r.roofline_tps = b / (floor_ms * 1e-3);
      }
      auto sm = engine.softmax_stats();
      if (!sm.ok()) return sm.status();
      r.softmax = *sm;
      report.rows.push_back(r);
      if (progress) progress(report.rows.back());
    }
  }
  report.model_type = c.model_type;
  report.dtype = dtype_name(w.plan.dtype);
  report.pdl = engine.pdl_active();
  report.gemm_table = engine.gemm_table_source();
  report.weight_bytes_per_step = weight_bytes;
  return report;
}

}  // namespace fdpp
