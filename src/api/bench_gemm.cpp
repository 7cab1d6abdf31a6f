// fdpp bench-gemm's measurement (fdpp/bench.h): ImplA (CUDA-core GEMV), every ImplB
// configuration (tensor-core flat GEMM) and ImplC (cuBLASLt) timed on a model's linear-layer
// shapes over a sweep of M, each beside the streaming-read bandwidth measured first.
#include <map>

#include "fdpp/bench.h"
#include "model/config.h"
#include "model/gemm_shapes.h"
#include "dispatch/gemm_plan.h"
#ifdef FDPP_HAVE_CUDA
#include "backend/cuda/bench/gemm_bench.h"
#include "backend/cuda/cuda_backend.h"
#endif

namespace fdpp {
namespace {

// The built-in shape sets: Llama-2's published configurations.
Result<ModelConfig> builtin_config(const std::string& name) {
  ModelConfig c;
  c.model_type = "llama";
  c.head_dim = 128;
  c.vocab_size = 32000;
  if (name == "llama-2-7b") {
    c.hidden_size = 4096, c.intermediate_size = 11008, c.num_layers = 32, c.num_heads = 32;
  } else if (name == "llama-2-13b") {
    c.hidden_size = 5120, c.intermediate_size = 13824, c.num_layers = 40, c.num_heads = 40;
  } else {
    return InvalidArgument("--shapes " + name + ": built-in sets are llama-2-7b and llama-2-13b");
  }
  c.num_kv_heads = c.num_heads;
  return c;
}

#ifdef FDPP_HAVE_CUDA
std::string config_name(const ImplChoice& c) {
  return c.impl == GemmImpl::kFlat ? kFlatConfigs[c.config].name : gemm_impl_name(c.impl);
}

GemmBenchRecord record(const cuda::GemmMeasurement& r) {
  GemmBenchRecord e;
  e.shape = r.shape;
  e.n = r.n;
  e.k = r.k;
  e.m = r.m;
  e.impl = gemm_impl_name(r.choice.impl);
  e.config = r.choice.config;
  e.config_name = config_name(r.choice);
  e.choice = impl_choice_name(r.choice);
  e.splits = r.choice.splits;
  e.algo = r.choice.algo;
  e.planned = r.planned;
  e.us = r.us;
  e.us_min = r.us_min;
  e.bytes = r.bytes;
  e.gbs = r.gbs();
  e.tflops = r.tflops();
  return e;
}
#endif

}  // namespace

int max_cublas_algo() { return kMaxCublasAlgo; }

Result<std::vector<GemmBenchShape>> gemm_bench_shapes(const std::string& model_dir,
                                                      const std::vector<std::string>& set_names) {
  std::vector<std::pair<std::string, ModelConfig>> sets;
  if (!model_dir.empty()) {
    auto c = load_model_config(model_dir);
    if (!c.ok()) return c.status();
    sets.emplace_back(model_dir, *c);
  } else {
    for (const std::string& name : set_names) {
      auto c = builtin_config(name);
      if (!c.ok()) return c.status();
      sets.emplace_back(name, *c);
    }
  }
  std::vector<GemmBenchShape> shapes;
  for (const auto& [set, cfg] : sets)
    for (const GemmShape& s : gemm_shapes(cfg)) shapes.push_back({set + ":" + s.name, s.n, s.k});
  return shapes;
}

#ifdef FDPP_HAVE_CUDA

Result<GemmBenchReport> bench_gemm(const GemmBenchSpec& spec, const GemmBenchProgress& progress) {
  cuda::GemmBenchOptions bo;
  for (const GemmBenchShape& s : spec.shapes) bo.shapes.push_back({s.name, s.n, s.k});
  bo.ms = spec.ms;
  bo.reps = spec.reps;
  bo.splits = spec.splits;
  bo.cublas_algos = spec.cublas_algos;
  bo.gemv = spec.gemv;
  bo.flat = spec.flat;
  bo.cublas = spec.cublas;
  DType dtype;
  if (!parse_dtype(spec.dtype, &dtype) || (dtype != DType::kF16 && dtype != DType::kBF16))
    return InvalidArgument("--dtype " + spec.dtype + ": fp16 or bf16");
  if (!cuda::cuda_device_available()) return Unsupported("bench-gemm needs a CUDA device");

  // ---- the ceiling, measured before anything else takes memory ----
  GemmBenchReport report;
  auto bw = measure_read_bandwidth();
  if (!bw.ok()) return bw.status();
  report.bandwidth = *bw;
  auto info = query_device_info(0);
  if (!info.ok()) return info.status();
  report.gpu = *info;
  report.dtype = dtype_name(dtype);
  for (int i = 0; i < kFlatConfigCount; ++i) {
    const FlatConfigDesc& c = kFlatConfigs[i];
    report.flat_configs.push_back({i, c.name, c.block_n, c.block_k, c.warps_n, c.warps_k, c.stages,
                                   c.max_m(), c.smem_bytes()});
  }

  cuda::CudaBackendOptions co;
  co.activation_dtype = dtype;
  co.pdl = spec.pdl;
  auto be = cuda::make_cuda_backend(co);
  if (!be.ok()) return be.status();
  auto results = cuda::run_gemm_bench(**be, bo, [&](const cuda::GemmMeasurement& r) {
    if (progress) progress(record(r));
  });
  if (!results.ok()) return results.status();

  // cuBLASLt per (shape, M), for the speedups.
  std::map<std::pair<std::string, int>, double> cublas_us;
  for (const auto& r : *results)
    // The "× cuBLASLt" reference is the library's own pick (its heuristic's first answer).
    if (r.choice.impl == GemmImpl::kCublas && r.choice.algo == 0) cublas_us[{r.shape, r.m}] = r.us;
  for (const auto& r : *results) {
    GemmBenchRecord e = record(r);
    if (auto it = cublas_us.find({r.shape, r.m}); it != cublas_us.end()) e.cublas_us = it->second;
    report.records.push_back(std::move(e));
  }
  return report;
}

#else

Result<GemmBenchReport> bench_gemm(const GemmBenchSpec&, const GemmBenchProgress&) {
  return Unsupported("bench-gemm needs CUDA: this fdpp was built without it (-DFDPP_CUDA=ON)");
}

#endif

}  // namespace fdpp
