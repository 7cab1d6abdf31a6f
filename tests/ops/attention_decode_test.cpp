// Split-KV decode attention on the GPU against the CPU reference (double
// accumulation) and a plain same-precision implementation, fp16 and bf16:
// head_dim 8 (generic kernel), 64/128 (tensor-core kernel), 256 (fast CUDA-core kernel) and
// odd ones; GQA groups 1..16; batches with a different length per sequence; 1 split, the
// heuristic's splits and forced many splits (most of them empty for short
// sequences); CUDA-graph capture and replay.
//
// The cache holds NaN at every position past a sequence's length and in every
// unused slot: a kernel that reads one key too many returns NaN and fails.
//
// The three sweeps (the main one, the other shapes, the tensor-core groups) are the
// harness's attention_decode cases (op_harness.h); the TESTs here are the checks that are
// not one launch against the reference: the split heuristic, bad inputs, graph replay and
// the workspace refused while capturing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "dispatch/decode_splits.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using test::round_to;

constexpr int kLengths[] = {1, 2, 63, 65, 97, 1025};

struct DecodeCase {
  int batch = 1;
  int n_kv = 2;
  int group = 1;
  int head_dim = 128;
  std::vector<int> lengths;  // (batch)
  int capacity = 1040;
  int n_layers = 1;
  int layer = 0;
  float q_std = 1.f;
  bool misalign_q = false;  // q 2 bytes off 16-byte alignment: the generic kernel's fallback
};

struct DecodeData {
  DecodeCase c;
  int H = 0;  // query heads
  KVCacheLayout layout;
  std::vector<float> host_k, host_v;  // (layers, slots, kv heads, capacity, D), NaN where unused
  KVCache cpu_cache, gpu_cache;
  std::vector<float> q;  // (B, H, D)
  std::vector<int32_t> slots, lengths;
  DeviceTensor q_buf, slots_dev, lengths_dev;
  Tensor q_dev;  // (B, H, D) view into q_buf
  std::vector<float> ref, plain;  // (B, H, D)
};

float scale_of(int D) { return 1.f / std::sqrt(static_cast<float>(D)); }

// Naive half-precision attention (HF eager): scores = q·kᵀ stored in dtype,
// times the scale stored in dtype, softmax in fp32 stored in dtype, P·V with an
// fp32 accumulator stored in dtype.
void plain_decode(DecodeData& s, DType dt) {
  const int D = s.c.head_dim;
  const float scale = scale_of(D);
  s.plain.assign(s.q.size(), 0.f);
  for (int b = 0; b < s.c.batch; ++b)
    for (int h = 0; h < s.H; ++h) {
      const int64_t base = s.layout.offset(s.c.layer, s.slots[b], h / s.c.group, 0);
      const float* q = s.q.data() + (int64_t{b} * s.H + h) * D;
      const int len = s.lengths[b];
      std::vector<float> p(len);
      float m = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < len; ++j) {
        float dot = 0.f;
        for (int d = 0; d < D; ++d) dot += q[d] * s.host_k[base + int64_t{j} * D + d];
        p[j] = round_to(dt, round_to(dt, dot) * scale);
        m = std::max(m, p[j]);
      }
      float sum = 0.f;
      for (int j = 0; j < len; ++j) sum += (p[j] = std::exp(p[j] - m));
      for (int j = 0; j < len; ++j) p[j] = round_to(dt, p[j] / sum);
      for (int d = 0; d < D; ++d) {
        float o = 0.f;
        for (int j = 0; j < len; ++j) o += p[j] * s.host_v[base + int64_t{j} * D + d];
        s.plain[(int64_t{b} * s.H + h) * D + d] = round_to(dt, o);
      }
    }
}

// The decode cases' machinery on a pair of backends: the harness's (OpEnv) or a fixture's.
class DecodeRunner {
 public:
  DecodeRunner(Backend* cpu, cuda::CudaBackend* gpu, DType dtype)
      : cpu_(cpu), gpu_(gpu), dtype_(dtype) {}
  DType dt() const { return dtype_; }

  // Caches (CPU f32 and GPU dtype, the same rounded values), q, slots and lengths.
  void prepare(const DecodeCase& c, DecodeData* s, uint32_t seed) {
    s->c = c;
    s->H = c.n_kv * c.group;
    KVCacheLayout& l = s->layout;
    l.n_layers = c.n_layers;
    l.n_slots = c.batch + 3;
    l.n_kv_heads = c.n_kv;
    l.capacity = c.capacity;
    l.head_dim = c.head_dim;
    const int64_t elems = l.n_layers * l.elements_per_layer();
    s->host_k.assign(elems, std::numeric_limits<float>::quiet_NaN());
    s->host_v = s->host_k;
    s->slots.resize(c.batch);
    s->lengths.assign(c.lengths.begin(), c.lengths.end());
    std::vector<float> kv = test::random_normal(2 * int64_t{c.capacity} * c.head_dim, 1.f, seed,
                                                dt());
    for (int b = 0; b < c.batch; ++b) {
      s->slots[b] = (5 * b + 2) % l.n_slots;  // distinct, and not the identity
      for (int g = 0; g < c.n_kv; ++g) {
        const int64_t at = l.offset(c.layer, s->slots[b], g, 0);
        const int64_t n = int64_t{s->lengths[b]} * c.head_dim;
        // Rotate through one random block so each (sequence, head) differs.
        const int64_t shift = (int64_t{b} * 7919 + g * 104729) % (int64_t{c.capacity} * c.head_dim);
        for (int64_t i = 0; i < n; ++i) {
          s->host_k[at + i] = kv[(shift + i) % kv.size()];
          s->host_v[at + i] = kv[(shift + i + kv.size() / 2) % kv.size()];
        }
      }
    }
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(s->cpu_cache, cpu_->alloc_kv_cache(l));
    std::memcpy(s->cpu_cache.k.data(), s->host_k.data(), elems * sizeof(float));
    std::memcpy(s->cpu_cache.v.data(), s->host_v.data(), elems * sizeof(float));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(s->gpu_cache, gpu_->alloc_kv_cache(l));
    const auto k_bytes = test::encode(s->host_k, dt()), v_bytes = test::encode(s->host_v, dt());
    const Tensor k_all(s->gpu_cache.k.data(), dt(), Device::kCUDA, {elems});
    const Tensor v_all(s->gpu_cache.v.data(), dt(), Device::kCUDA, {elems});
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(k_bytes.data(), k_all));
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(v_bytes.data(), v_all));
    FDPP_GPU_ASSERT_OK(gpu_->synchronize());

    const int64_t B = c.batch, H = s->H, D = c.head_dim;
    s->q = test::random_normal(B * H * D, c.q_std, seed + 1, dt());
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(s->q_buf, test::alloc_poisoned(*gpu_, dt(), {B * H * D + 1}));
    s->q_dev = Tensor(static_cast<char*>(s->q_buf.t.data) + (c.misalign_q ? 2 : 0), dt(),
                      Device::kCUDA, {B, H, D});
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(s->slots_dev, test::upload_i32(*gpu_, s->slots, {B}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(s->lengths_dev, test::upload_i32(*gpu_, s->lengths, {B}));
    upload_and_reference(s);
  }

  // Sends q and lengths to the GPU (into the existing buffers) and recomputes ref and plain.
  void upload_and_reference(DecodeData* s) {
    const int64_t B = s->c.batch, H = s->H, D = s->c.head_dim;
    const auto q_bytes = test::encode(s->q, dt());
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(q_bytes.data(), s->q_dev));
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(s->lengths.data(), s->lengths_dev.t));
    FDPP_GPU_ASSERT_OK(gpu_->synchronize());
    s->ref.assign(B * H * D, 0.f);
    AttentionDecodeArgs a;
    a.q = test::host_view(s->q, {B, H, D});
    a.cache = &s->cpu_cache;
    a.layer = s->c.layer;
    a.slots = test::host_view(s->slots, {B});
    a.lengths = test::host_view(s->lengths, {B});
    a.max_length = s->c.capacity;
    a.scale = scale_of(D);
    a.out = test::host_view(s->ref, {B, H, D});
    FDPP_GPU_ASSERT_OK(cpu_->attention_decode(a));
    plain_decode(*s, dt());
  }

  AttentionDecodeArgs gpu_args(const DecodeData& s, int max_length, const Tensor& out) const {
    AttentionDecodeArgs a;
    a.q = s.q_dev;
    a.cache = &s.gpu_cache;
    a.layer = s.c.layer;
    a.slots = s.slots_dev.t;
    a.lengths = s.lengths_dev.t;
    a.max_length = max_length;
    a.scale = scale_of(s.c.head_dim);
    a.out = out;
    return a;
  }

  // One launch with `splits` forced (0: the heuristic), checked against the reference.
  void run(const DecodeData& s, int max_length, int splits, const std::string& what) {
    SCOPED_TRACE(what);
    gpu_->set_decode_splits_override(splits);
    const int64_t B = s.c.batch, H = s.H, D = s.c.head_dim;
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor out, test::alloc_poisoned(*gpu_, dt(), {B, H, D}));
    FDPP_GPU_ASSERT_OK(gpu_->attention_decode(gpu_args(s, max_length, out.t)));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto got, test::download(*gpu_, out.t));
    EXPECT_TRUE(test::close_by_flash_rule(got, s.ref, s.plain, dt(), what));
  }

  // The standard set of split settings on one prepared case.
  void run_all(const DecodeData& s, const std::string& name) {
    const int longest = *std::max_element(s.lengths.begin(), s.lengths.end());
    run(s, longest, 0, name + ", heuristic, max_length = longest");
    run(s, s.c.capacity, 0, name + ", heuristic, max_length = capacity");
    run(s, longest, 1, name + ", 1 split");
    run(s, longest, 7, name + ", 7 splits");
    run(s, longest, 40, name + ", 40 splits");
    run(s, longest, kDecodeMaxSplits, name + ", max splits");
    gpu_->set_decode_splits_override(0);
  }

  Backend* cpu_;
  cuda::CudaBackend* gpu_;
  DType dtype_;
};

class CudaDecode : public test::CpuAndCudaBackends {
 protected:
  DecodeRunner runner() const { return {cpu_.get(), gpu_.get(), dt()}; }
  void prepare(const DecodeCase& c, DecodeData* s, uint32_t seed) { runner().prepare(c, s, seed); }
  void upload_and_reference(DecodeData* s) { runner().upload_and_reference(s); }
  AttentionDecodeArgs gpu_args(const DecodeData& s, int max_length, const Tensor& out) const {
    return runner().gpu_args(s, max_length, out);
  }
  void run(const DecodeData& s, int max_length, int splits, const std::string& what) {
    runner().run(s, max_length, splits, what);
  }
};

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaDecode, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

std::string case_name(const DecodeCase& c) {
  return fmt::format("D {} group {} kv {} lengths {}", c.head_dim, c.group, c.n_kv,
                     fmt::join(c.lengths, " "));
}

// One launch set (run_all: the heuristic, 1, 7, 40 and the most splits) of one case.
void check_decode(test::OpEnv& env, const DecodeCase& c, uint32_t seed, const std::string& name,
                  cuda::CudaBackend::DecodeTiles tiles) {
  DecodeRunner r(env.cpu.get(), env.gpu.get(), env.dtype);
  DecodeData s;
  r.prepare(c, &s, seed);
  if (::testing::Test::HasFatalFailure()) return;
  r.gpu_->set_decode_tiles_override(tiles);
  r.run_all(s, name);
  r.gpu_->set_decode_tiles_override(cuda::CudaBackend::DecodeTiles::kAuto);
}

// The heuristic's launch: reads each sequence's keys and values, q, writes out.
Result<test::PerfLaunch> perf_decode(test::OpEnv& env, const DecodeCase& c) {
  auto r = std::make_shared<DecodeRunner>(env.cpu.get(), env.gpu.get(), env.dtype);
  auto s = std::make_shared<DecodeData>();
  r->prepare(c, s.get(), 1);
  if (::testing::Test::HasFatalFailure()) return Internal("attention_decode: prepare failed");
  const int64_t B = c.batch, H = s->H, D = c.head_dim;
  test::PerfLaunch p;
  FDPP_ASSIGN_OR_RETURN(DeviceTensor out, test::alloc_poisoned(*env.gpu, env.dtype, {B, H, D}));
  const int longest = *std::max_element(s->lengths.begin(), s->lengths.end());
  const Tensor o = out.t;
  // (The launch owns the runner and the case's data.)
  p.launch = [r, s, longest, o] { return r->gpu_->attention_decode(r->gpu_args(*s, longest, o)); };
  int64_t keys = 0;
  for (int len : s->lengths) keys += len;
  p.bytes = static_cast<double>((2 * keys * c.n_kv * D + 2 * B * H * D) * dtype_size(env.dtype));
  p.flops = 4.0 * static_cast<double>(keys) * H * D;  // q·k and p·v, every query head
  p.hold(std::move(out));
  return p;
}

void add_decode_cases(std::vector<test::OpCase>& cases) {
  using Tiles = cuda::CudaBackend::DecodeTiles;
  for (DType dtype : test::op_dtypes()) {
    // The sweep (the old CudaDecode.Sweep): its lengths rotate through kLengths, its seeds
    // step by 10 from 1010.
    int offset = 0;
    uint32_t seed = 1000;
    for (int D : {8, 64, 128, 256})
      for (int group : {1, 2, 4, 8})
        for (int batch : {1, 3, 8}) {
          DecodeCase c;
          c.batch = batch;
          c.group = group;
          c.head_dim = D;
          for (int b = 0; b < batch; ++b) c.lengths.push_back(kLengths[(b + offset) % 6]);
          ++offset;
          const uint32_t case_seed = seed += 10;
          cases.push_back(
              {"attention_decode",
               test::shape_name({{"sweep_D", D}, {"group", group}, {"batch", batch}}), dtype,
               [=](test::OpEnv& e) { check_decode(e, c, case_seed, case_name(c), Tiles::kAuto); },
               [=](test::OpEnv& e) { return perf_decode(e, c); }});
        }

    // The other shapes (the old CudaDecode.OtherShapes), seeds from 2010.
    std::vector<DecodeCase> other;
    DecodeCase c;
    c = {};  // GQA groups above 8 take several CTAs per KV head
    c.batch = 2, c.n_kv = 1, c.group = 12, c.head_dim = 128, c.lengths = {97, 1025};
    other.push_back(c);
    c = {};
    c.batch = 3, c.n_kv = 2, c.group = 16, c.head_dim = 64, c.lengths = {1025, 1, 65};
    other.push_back(c);
    c = {};
    c.batch = 2, c.n_kv = 3, c.group = 9, c.head_dim = 8, c.lengths = {63, 2};
    other.push_back(c);
    for (int D : {2, 40, 96}) {  // head dims without a template: the generic kernel
      c = {};
      c.batch = 3, c.n_kv = 2, c.group = 3, c.head_dim = D, c.lengths = {97, 1025, 2};
      other.push_back(c);
    }
    c = {};  // peaky softmax: scores with std ~8 move the running max often
    c.batch = 2, c.group = 4, c.head_dim = 128, c.lengths = {1025, 65}, c.q_std = 8.f;
    other.push_back(c);
    c = {};  // q not 16-byte aligned: the generic kernel even at head_dim 128
    c.batch = 3, c.group = 2, c.head_dim = 128, c.lengths = {65, 1025, 1}, c.misalign_q = true;
    other.push_back(c);
    c = {};  // a layer other than the first
    c.batch = 2, c.group = 2, c.head_dim = 64, c.lengths = {97, 63}, c.n_layers = 3, c.layer = 2;
    other.push_back(c);
    c = {};  // a capacity past the longest length, no power of two
    c.batch = 1, c.group = 1, c.head_dim = 256, c.lengths = {1025}, c.capacity = 3001;
    other.push_back(c);
    seed = 2000;
    for (size_t i = 0; i < other.size(); ++i) {
      const DecodeCase k = other[i];
      const uint32_t case_seed = seed += 10;
      cases.push_back({"attention_decode", test::shape_name({{"other", static_cast<long long>(i)},
                                                             {"D", k.head_dim},
                                                             {"group", k.group}}),
                       dtype,
                       [=](test::OpEnv& e) {
                         check_decode(e, k, case_seed,
                                      case_name(k) + (k.misalign_q ? " misaligned q" : ""),
                                      Tiles::kAuto);
                       },
                       [=](test::OpEnv& e) { return perf_decode(e, k); }});
    }

    // Head dims 64 and 128 run the tensor-core kernel (decode_mma_kernel.cuh): every group size
    // 1..8 and 16 (heads on the mma's 8-column side, the rest zero rows), lengths that end inside
    // a warp tile (16 keys at D 128, 32 at D 64), inside a quad's key pair and on odd keys, and
    // sequences long enough that each of the CTA's 4 warps runs its 3-stage ring many times.
    // At head_dim 128 both warp tiles run every case (32-key wide tiles: lengths 31, 33, 47 end
    // inside one), whatever the rule picks.
    // (The old CudaDecode.TensorCoreKernelGroupsAndOddLengths, seeds from 3010.)
    seed = 3000;
    offset = 0;
    const std::vector<int> lengths = {1, 3, 17, 31, 33, 47, 129, 4097};
    for (int D : {64, 128})
      for (Tiles tiles : {Tiles::kNarrow, Tiles::kWide}) {
        if (D == 64 && tiles == Tiles::kWide) continue;  // narrow only at head_dim 64
        for (int group : {1, 2, 3, 4, 5, 6, 7, 8, 16}) {
          DecodeCase c;
          c.batch = 3, c.n_kv = 2, c.group = group, c.head_dim = D, c.capacity = 4100;
          for (int b = 0; b < c.batch; ++b)
            c.lengths.push_back(lengths[(b + offset) % lengths.size()]);
          offset += 2;
          const uint32_t case_seed = seed += 10;
          const bool wide = tiles == Tiles::kWide;
          cases.push_back(
              {"attention_decode",
               test::shape_name({{"tc_D", D}, {wide ? "wide_group" : "narrow_group", group}}),
               dtype,
               [=](test::OpEnv& e) {
                 check_decode(e, c, case_seed,
                              case_name(c) + (wide ? ", wide tiles" : ", narrow tiles"), tiles);
               },
               {}});
        }
      }
  }
}
FDPP_REGISTER_OP_CASES(add_decode_cases);

TEST_P(CudaDecode, HeuristicSplitsLongContexts) {
  // The sweep's "max_length = capacity" runs exercise real multi-split plans.
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(int s, gpu_->decode_splits(1, 2, 1, 128, 1040, true));
  EXPECT_GT(s, 1);
  // 32 (sequence, head) CTAs per split at 32K keys: split enough to reach ~every SM (the
  // tensor-core plan counts one CTA per SM: 4 splits, 128 CTAs on the H200's 132 SMs).
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(s, gpu_->decode_splits(1, 32, 1, 128, 32768, true));
  EXPECT_GE(s, 4);
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(s, gpu_->decode_splits(8, 8, 4, 128, 100, true));
  EXPECT_EQ(s, 1);
}

TEST_P(CudaDecode, BadSlotOrLengthReadsNothing) {
  DecodeCase c;
  c.batch = 3, c.group = 2, c.head_dim = 64, c.lengths = {97, 97, 97};
  DecodeData s;
  prepare(c, &s, 3000);
  if (HasFatalFailure()) return;
  // Sequence 0: a slot outside the cache; 1: length 0; 2: a length past the
  // capacity (clamped). The engine never sends these; the kernel must not fault.
  std::vector<int32_t> slots = s.slots, lengths = s.lengths;
  slots[0] = s.layout.n_slots;
  lengths[1] = 0;
  lengths[2] = c.capacity + 100;
  FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(slots.data(), s.slots_dev.t));
  FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(lengths.data(), s.lengths_dev.t));
  for (int splits : {1, 9}) {
    gpu_->set_decode_splits_override(splits);
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor out,
                                  test::alloc_poisoned(*gpu_, dt(), {3, s.H, c.head_dim}));
    FDPP_GPU_ASSERT_OK(gpu_->attention_decode(gpu_args(s, c.capacity, out.t)));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto got, test::download(*gpu_, out.t));
    const int64_t row = int64_t{s.H} * c.head_dim;
    for (int64_t i = 0; i < 2 * row; ++i) ASSERT_EQ(got[i], 0.f) << "splits " << splits << " " << i;
    // Sequence 2 reads its whole slot, where only 97 positions hold keys: NaN, but no fault.
    FDPP_GPU_ASSERT_OK(gpu_->synchronize());
  }
}

TEST_P(CudaDecode, GraphReplayReadsCurrentInputs) {
  DecodeCase c;
  c.batch = 3, c.group = 4, c.head_dim = 128, c.lengths = {65, 1025, 97};
  DecodeData s;
  prepare(c, &s, 4000);
  if (HasFatalFailure()) return;
  const int64_t B = c.batch, H = s.H, D = c.head_dim;
  // Warm-up: the eager run grows the workspace and caches the occupancy.
  run(s, c.capacity, 0, "eager warm-up");
  if (HasFatalFailure()) return;
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor out, test::alloc_poisoned(*gpu_, dt(), {B, H, D}));
  FDPP_GPU_ASSERT_OK(gpu_->attention_decode(gpu_args(s, c.capacity, out.t)));
  FDPP_GPU_ASSERT_OK(gpu_->synchronize());

  FDPP_GPU_ASSERT_OK(gpu_->begin_capture());
  const Status captured = gpu_->attention_decode(gpu_args(s, c.capacity, out.t));
  auto graph = gpu_->end_capture();
  FDPP_GPU_ASSERT_OK(captured);
  FDPP_GPU_ASSERT_OK(graph);

  // New q and shorter lengths (the cache holds keys up to the old ones), written
  // into the same buffers: the replay must read them.
  s.lengths = {64, 1000, 2};
  s.q = test::random_normal(B * H * D, 1.f, 4321, dt());
  upload_and_reference(&s);
  if (HasFatalFailure()) return;
  for (int rep = 0; rep < 2; ++rep) {
    FDPP_GPU_ASSERT_OK(gpu_->fill_bytes(out.t, 0xFF));
    FDPP_GPU_ASSERT_OK(graph.value()->replay());
    FDPP_GPU_ASSERT_OK(gpu_->synchronize());
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(auto got, test::download(*gpu_, out.t));
    EXPECT_TRUE(test::close_by_flash_rule(got, s.ref, s.plain, dt(), "graph replay"));
  }
}

TEST_P(CudaDecode, WorkspaceGrowthDuringCaptureIsRefused) {
  DecodeCase c;
  c.batch = 2, c.group = 2, c.head_dim = 64, c.lengths = {97, 65};
  DecodeData s;
  prepare(c, &s, 5000);
  if (HasFatalFailure()) return;
  FDPP_GPU_ASSERT_OK_AND_ASSIGN(DeviceTensor out,
                                test::alloc_poisoned(*gpu_, dt(), {2, s.H, c.head_dim}));
  FDPP_GPU_ASSERT_OK(gpu_->synchronize());
  ASSERT_EQ(gpu_->decode_workspace_bytes(), 0u);
  gpu_->set_decode_splits_override(16);  // needs a workspace the backend does not have yet
  FDPP_GPU_ASSERT_OK(gpu_->begin_capture());
  const Status st = gpu_->attention_decode(gpu_args(s, 97, out.t));
  // Always end the capture (as the engine does); the empty graph itself is of no interest.
  (void)gpu_->end_capture();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("capturing"), std::string::npos) << st.message();
  // Eagerly it grows the workspace and is right.
  run(s, 97, 16, "eager after the refused capture");
  EXPECT_GT(gpu_->decode_workspace_bytes(), 0u);
}

}  // namespace
}  // namespace fdpp
