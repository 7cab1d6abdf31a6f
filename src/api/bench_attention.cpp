// fdpp bench-attention's measurement (fdpp/bench.h): the attention kernels alone, synchronized
// vs unified-max softmax (design.md, Technique 1), beside the streaming-read bandwidth
// measured first in the same run.
#include <map>

#include <fmt/format.h>

#include "fdpp/bench.h"
#include "core/dtype.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/attention_bench.h"
#include "backend/cuda/cuda_backend.h"
#endif

namespace fdpp {

#ifdef FDPP_HAVE_CUDA

namespace {

cuda::CudaBackend::DecodeTiles decode_tiles(AttentionTiles t) {
  switch (t) {
    case AttentionTiles::kNarrow: return cuda::CudaBackend::DecodeTiles::kNarrow;
    case AttentionTiles::kWide: return cuda::CudaBackend::DecodeTiles::kWide;
    case AttentionTiles::kAuto: break;
  }
  return cuda::CudaBackend::DecodeTiles::kAuto;
}

}  // namespace

Result<AttentionBenchReport> bench_attention(const AttentionBenchSpec& o,
                                             const AttentionBenchProgress& progress) {
  if (!cuda::cuda_device_available()) return Unsupported("bench-attention needs a CUDA device");
  AttentionBenchReport report;
  auto bw = measure_read_bandwidth();
  if (!bw.ok()) return bw.status();
  report.bandwidth = *bw;
  if (auto info = query_device_info(0); info.ok()) report.gpu = *info;

  std::vector<AttentionBenchRecord>& rows = report.records;
  for (const std::string& dname : o.dtypes) {
    DType dt;
    if (!parse_dtype(dname, &dt) || dt == DType::kF32) return InvalidArgument("--dtype " + dname);
    cuda::CudaBackendOptions bo;
    bo.activation_dtype = dt;
    // Kernel against kernel: consecutive replayed calls do not overlap (torch's and cuDNN's
    // do not either); what PDL adds between layers is measured by fdpp bench --pdl on|off.
    bo.pdl = false;
    auto be = cuda::make_cuda_backend(bo);
    if (!be.ok()) return be.status();
    const auto one = [&](const char* kind, int b, int L, std::pair<int, int> h,
                         AttentionSoftmax m) -> Status {
      cuda::AttentionBenchCase c;
      c.batch = b;
      c.length = L;
      c.n_heads = h.first;
      c.n_kv_heads = h.second;
      c.head_dim = o.head_dim;
      c.mode = m == AttentionSoftmax::kUnified ? SoftmaxMode::kUnified : SoftmaxMode::kSynchronized;
      c.phi = o.phi;
      c.follow = o.follow;
      c.reps = o.reps;
      const bool decode = std::string(kind) == "decode";
      auto r = decode ? cuda::bench_decode_attention(**be, c)
                      : cuda::bench_prefill_attention(**be, c);
      if (!r.ok()) return r.status();
      AttentionBenchRecord e;
      e.kind = kind;
      e.dtype = dtype_name(dt);
      e.softmax = m == AttentionSoftmax::kUnified ? "unified" : "sync";
      e.batch = b;
      e.length = L;
      e.heads_q = h.first;
      e.heads_kv = h.second;
      e.us = r->us;
      e.us_min = r->us_min;
      e.gbs = r->gbs();
      e.tflops = r->tflops();
      e.splits = r->splits;
      e.wide_tiles = r->wide_tiles;
      e.layers = r->layers;
      e.rows = r->rows;
      e.fallbacks = r->fallbacks;
      rows.push_back(e);
      if (progress) progress(rows.back());
      return Status::Ok();
    };
    if (o.decode)
      for (auto h : o.heads)
        for (int b : o.batches)
          for (int L : o.lengths)
            for (int s : o.splits)
              for (auto t : o.tiles) {
                (*be)->set_decode_splits_override(s);  // 0 restores the heuristic
                (*be)->set_decode_tiles_override(decode_tiles(t));
                for (AttentionSoftmax m : o.softmax)
                  if (Status st = one("decode", b, L, h, m); !st.ok()) return st;
              }
    (*be)->set_decode_splits_override(0);
    (*be)->set_decode_tiles_override(cuda::CudaBackend::DecodeTiles::kAuto);
    if (o.prefill)
      for (auto h : o.prefill_heads)
        for (int b : o.prefill_batches)
          for (int L : o.prefill_lengths)
            for (AttentionSoftmax m : o.softmax)
              if (Status st = one("prefill", b, L, h, m); !st.ok()) return st;
  }

  // The sync → unified gain of each configuration (same dtype, shape).
  std::map<std::string, double> sync_us;
  const auto key = [](const AttentionBenchRecord& r) {
    return fmt::format("{} {} {} {} {}/{} {} {}", r.kind, r.dtype, r.batch, r.length, r.heads_q,
                       r.heads_kv, r.splits, r.wide_tiles);
  };
  for (const auto& r : rows)
    if (r.softmax == "sync") sync_us[key(r)] = r.us;
  for (auto& r : rows) {
    auto it = sync_us.find(key(r));
    r.gain_vs_sync = r.softmax == "unified" && it != sync_us.end() && r.us > 0 ? it->second / r.us : 0;
  }
  return report;
}

#else

Result<AttentionBenchReport> bench_attention(const AttentionBenchSpec&, const AttentionBenchProgress&) {
  return Unsupported("bench-attention needs a CUDA build (configure with -DFDPP_CUDA=ON)");
}

#endif

}  // namespace fdpp
