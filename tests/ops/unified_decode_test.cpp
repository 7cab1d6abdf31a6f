// Unified-max decode attention (design.md, Technique 1) against the CPU reference (double
// accumulation) under flash-attention's tolerance rule, fp16 and bf16: the odd-size sweep
// (lengths 1..1025, batch 1/3/8, GQA 1..8, head_dim 8 and 40 (generic kernel), 64, 128) with
// one split, the heuristic's and forced many (mostly empty) splits, calibrated and
// row-following φ; then forced fallbacks, where every affected row must be recomputed
// exactly and counted exactly once: φ far below the scores (overflow side), far above them
// (underflow side), one huge "sink" key with all others small (only its split is redone),
// all keys but one far below (no fallback: the rest underflows harmlessly), empty splits,
// length 1; the row maxes kept for row-following φ; a CUDA-graph replay.
//
// The sweep is the harness's attention_decode_unified cases (op_harness.h); the forced
// fallbacks, counters and graph replay are TESTs here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "dispatch/decode_splits.h"
#include "dispatch/softmax_range.h"
#include "common/gpu_test_util.h"
#include "ops/op_harness.h"

namespace fdpp {
namespace {

using test::DeviceTensor;
using test::round_to;

constexpr int kLengths[] = {1, 2, 63, 65, 97, 1025};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Case {
  int batch = 1, n_kv = 2, group = 1, head_dim = 128;
  std::vector<int> lengths;
  bool misalign_q = false;  // q 2 bytes off 16-byte alignment: the generic kernel
};

std::string name(const Case& c) {
  return fmt::format("D {} group {} lengths {}{}", c.head_dim, c.group, fmt::join(c.lengths, " "),
                     c.misalign_q ? " misaligned q" : "");
}

// One unified-decode case's state and launches on a pair of backends: the harness's
// (OpEnv) or the fixture's below.
class UnifiedRunner {
 public:
  UnifiedRunner() = default;
  UnifiedRunner(Backend* cpu, cuda::CudaBackend* gpu, DType dtype)
      : cpu_(cpu), gpu_(gpu), dtype_(dtype) {}
  DType dt() const { return dtype_; }
  float scale() const { return 1.f / std::sqrt(static_cast<float>(c_.head_dim)); }

  // Random K, V (NaN outside the sequences) and q, rounded to the dtype.
  void prepare(const Case& c, uint32_t seed) {
    c_ = c;
    H_ = c.n_kv * c.group;
    l_ = KVCacheLayout{1, c.batch + 2, c.n_kv, *std::max_element(c.lengths.begin(),
                                                                  c.lengths.end()) + 7,
                       c.head_dim};
    const int64_t elems = l_.elements_per_layer();
    k_.assign(elems, kNaN);
    v_.assign(elems, kNaN);
    slots_.resize(c.batch);
    const auto rk = test::random_normal(elems, 1.f, seed, dt());
    const auto rv = test::random_normal(elems, 1.f, seed + 1, dt());
    for (int b = 0; b < c.batch; ++b) {
      slots_[b] = (3 * b + 1) % l_.n_slots;
      for (int g = 0; g < c.n_kv; ++g) {
        const int64_t at = l_.offset(0, slots_[b], g, 0);
        for (int64_t i = 0; i < int64_t{c.lengths[b]} * c.head_dim; ++i) {
          k_[at + i] = rk[at + i];
          v_[at + i] = rv[at + i];
        }
      }
    }
    q_ = test::random_normal(int64_t{c.batch} * H_ * c.head_dim, 1.f, seed + 2, dt());
  }

  // Score control: q of head h is Q on dim 0 and zero elsewhere, and key j of (b, kv head)
  // has k[0] = s · √D / Q, so that s = scale·q·k is exactly the value asked for (both
  // representable: Q and the k[0] used here are small integers times powers of two).
  void set_q_one_hot(int b, int h, float Q) {
    float* q = q_.data() + (int64_t{b} * H_ + h) * c_.head_dim;
    std::fill(q, q + c_.head_dim, 0.f);
    q[0] = Q;
  }
  void set_k0(int b, int kv, int j, float value) {
    k_[l_.offset(0, slots_[b], kv, j)] = round_to(dt(), value);
  }

  // Uploads everything and computes the CPU reference and the plain same-precision result.
  void upload() {
    const int64_t B = c_.batch, D = c_.head_dim;
    KVCache cpu_cache;
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(cpu_cache, cpu_->alloc_kv_cache(l_));
    std::copy(k_.begin(), k_.end(), static_cast<float*>(cpu_cache.k.data()));
    std::copy(v_.begin(), v_.end(), static_cast<float*>(cpu_cache.v.data()));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(cache_, gpu_->alloc_kv_cache(l_));
    const int64_t elems = l_.elements_per_layer();
    const auto kb = test::encode(k_, dt()), vb = test::encode(v_, dt());
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(kb.data(), Tensor(cache_.k.data(), dt(),
                                                               Device::kCUDA, {elems})));
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(vb.data(), Tensor(cache_.v.data(), dt(),
                                                               Device::kCUDA, {elems})));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(q_buf_, test::alloc_poisoned(*gpu_, dt(), {B * H_ * D + 1}));
    q_dev_ = Tensor(static_cast<char*>(q_buf_.t.data) + (c_.misalign_q ? 2 : 0), dt(),
                    Device::kCUDA, {B, H_, D});
    const auto qb = test::encode(q_, dt());
    FDPP_GPU_ASSERT_OK(gpu_->copy_from_host(qb.data(), q_dev_));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(slots_dev_, test::upload_i32(*gpu_, slots_, {B}));
    std::vector<int32_t> lens(c_.lengths.begin(), c_.lengths.end());
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(lengths_dev_, test::upload_i32(*gpu_, lens, {B}));
    // Softmax state: φ (H), row maxes (slots, H) NaN, the counter.
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(phi_dev_, test::upload(*gpu_, std::vector<float>(H_, 0.f),
                                                         DType::kF32, {H_}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(
        row_max_dev_, test::upload(*gpu_, std::vector<float>(int64_t{l_.n_slots} * H_, kNaN),
                                   DType::kF32, {l_.n_slots, H_}));
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(counter_, test::upload_i32(*gpu_, {0}, {1}));

    ref_.assign(B * H_ * D, 0.f);
    AttentionDecodeArgs a;
    a.q = test::host_view(q_, {B, H_, D});
    a.cache = &cpu_cache;
    a.slots = test::host_view(slots_, {B});
    a.lengths = test::host_view(lens, {B});
    a.max_length = l_.capacity;
    a.scale = scale();
    a.out = test::host_view(ref_, {B, H_, D});
    FDPP_GPU_ASSERT_OK(cpu_->attention_decode(a));
    plain_and_row_max();
  }

  // HF-eager-style half-precision attention (scores, softmax and P rounded to the dtype, P·V
  // accumulated in fp32) and the exact row maxes (s units) the kernels should keep.
  void plain_and_row_max() {
    const int D = c_.head_dim;
    plain_.assign(q_.size(), 0.f);
    row_max_.assign(int64_t{c_.batch} * H_, 0.f);
    for (int b = 0; b < c_.batch; ++b)
      for (int h = 0; h < H_; ++h) {
        const int64_t base = l_.offset(0, slots_[b], h / c_.group, 0);
        const float* q = q_.data() + (int64_t{b} * H_ + h) * D;
        const int len = c_.lengths[b];
        std::vector<double> s(len), p(len);
        double m = -INFINITY, m_exact = -INFINITY;
        for (int j = 0; j < len; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += double(q[d]) * k_[base + int64_t{j} * D + d];
          m_exact = std::max(m_exact, dot * scale());
          s[j] = round_to(dt(), round_to(dt(), static_cast<float>(dot)) * scale());
          m = std::max(m, s[j]);
        }
        row_max_[int64_t{b} * H_ + h] = static_cast<float>(m_exact);
        double sum = 0;
        for (int j = 0; j < len; ++j) sum += (p[j] = std::exp(s[j] - m));
        for (int j = 0; j < len; ++j) p[j] = round_to(dt(), static_cast<float>(p[j] / sum));
        for (int d = 0; d < D; ++d) {
          float o = 0.f;
          for (int j = 0; j < len; ++j) o += float(p[j]) * v_[base + int64_t{j} * D + d];
          plain_[(int64_t{b} * H_ + h) * D + d] = round_to(dt(), o);
        }
      }
  }

  // With φ = 0 (calibrated), then row-following φ (from the row maxes the first call kept),
  // at the heuristic's and forced split counts: every result right and no row recomputed.
  void expect_no_fallback_at_any_split() {
    for (int splits : {0, 1, 7, 40}) {
      const std::string what = fmt::format("{} splits {}", name(c_), splits);
      EXPECT_EQ(run(zeros(), false, splits, what + " calibrated φ"), 0);
      EXPECT_EQ(run(zeros(), true, splits, what + " follow"), 0);
    }
  }

  // One unified launch (splits forced, 0: the heuristic) with φ per head; checks the result
  // and returns how many rows it recomputed.
  int64_t run(const std::vector<float>& phi, bool follow, int splits, const std::string& what,
              bool use_graph = false) {
    SCOPED_TRACE(what);
    const int64_t B = c_.batch, D = c_.head_dim;
    gpu_->set_decode_splits_override(splits);
    EXPECT_TRUE(gpu_->copy_from_host(phi.data(), phi_dev_.t).ok());
    int32_t before = 0;
    EXPECT_TRUE(gpu_->copy_to_host(counter_.t, &before).ok());
    auto out = test::alloc_poisoned(*gpu_, dt(), {B, H_, D});
    EXPECT_TRUE(out.ok());
    if (!out.ok()) return -1;
    AttentionDecodeArgs a;
    a.q = q_dev_;
    a.cache = &cache_;
    a.slots = slots_dev_.t;
    a.lengths = lengths_dev_.t;
    a.max_length = l_.capacity;
    a.scale = scale();
    a.out = out->t;
    a.softmax.mode = SoftmaxMode::kUnified;
    a.softmax.phi = phi_dev_.t;
    a.softmax.follow = follow;
    a.softmax.row_max = row_max_dev_.t;
    a.softmax.fallbacks = counter_.t;
    if (use_graph) {
      EXPECT_TRUE(gpu_->attention_decode(a).ok());  // eager first: workspace, occupancy
      EXPECT_TRUE(gpu_->synchronize().ok());
      EXPECT_TRUE(gpu_->copy_to_host(counter_.t, &before).ok());
      EXPECT_TRUE(gpu_->fill_bytes(out->t, 0xFF).ok());
      EXPECT_TRUE(gpu_->begin_capture().ok());
      const Status captured = gpu_->attention_decode(a);
      auto graph = gpu_->end_capture();
      EXPECT_TRUE(captured.ok() && graph.ok()) << captured.to_string();
      if (!graph.ok()) return -1;
      EXPECT_TRUE((*graph)->replay().ok());
      EXPECT_TRUE(gpu_->synchronize().ok());
    } else {
      const Status st = gpu_->attention_decode(a);
      EXPECT_TRUE(st.ok()) << st.to_string();
    }
    auto got = test::download(*gpu_, out->t);
    EXPECT_TRUE(got.ok());
    if (!got.ok()) return -1;
    EXPECT_TRUE(test::close_by_flash_rule(*got, ref_, plain_, dt(), what));
    int32_t after = 0;
    EXPECT_TRUE(gpu_->copy_to_host(counter_.t, &after).ok());
    gpu_->set_decode_splits_override(0);
    return int64_t{after} - before;
  }

  // The row maxes the kernels kept for (b, h), s units (NaN where no row ran).
  std::vector<float> kept_row_max() {
    auto all = test::download(*gpu_, row_max_dev_.t);
    EXPECT_TRUE(all.ok());
    std::vector<float> r(int64_t{c_.batch} * H_, kNaN);
    if (!all.ok()) return r;
    for (int b = 0; b < c_.batch; ++b)
      for (int h = 0; h < H_; ++h) r[int64_t{b} * H_ + h] = (*all)[int64_t{slots_[b]} * H_ + h];
    return r;
  }

  std::vector<float> zeros() const { return std::vector<float>(H_, 0.f); }

  Case c_;
  int H_ = 0;
  KVCacheLayout l_;
  std::vector<float> k_, v_, q_, ref_, plain_, row_max_;
  std::vector<int32_t> slots_;
  KVCache cache_;
  DeviceTensor q_buf_, slots_dev_, lengths_dev_, phi_dev_, row_max_dev_, counter_;
  Tensor q_dev_;
  Backend* cpu_ = nullptr;
  cuda::CudaBackend* gpu_ = nullptr;
  DType dtype_ = DType::kF16;
};

// The TESTs' fixture: a CPU and a CUDA backend of the parameter's dtype, and a runner on them.
class UnifiedDecode : public ::testing::TestWithParam<DType>, public UnifiedRunner {
 protected:
  void SetUp() override {
    FDPP_REQUIRE_GPU();
    cpu_owned_ = make_cpu_backend();
    cuda::CudaBackendOptions o;
    o.activation_dtype = GetParam();
    FDPP_GPU_ASSERT_OK_AND_ASSIGN(gpu_owned_, cuda::make_cuda_backend(o));
    cpu_ = cpu_owned_.get();
    gpu_ = gpu_owned_.get();
    dtype_ = GetParam();
  }
  std::unique_ptr<Backend> cpu_owned_;
  std::unique_ptr<cuda::CudaBackend> gpu_owned_;
};

INSTANTIATE_TEST_SUITE_P(Dtypes, UnifiedDecode, ::testing::Values(DType::kF16, DType::kBF16),
                         test::dtype_param_name);

// Random scores (|s| of a few units) sit deep inside the fp32 range of φ = 0: no fallback.
// One case of the old UnifiedDecode.SweepMatchesReferenceWithoutFallbacks.
void check_unified_sweep(test::OpEnv& env, const Case& c, uint32_t seed) {
  UnifiedRunner u(env.cpu.get(), env.gpu.get(), env.dtype);
  u.prepare(c, seed);
  u.upload();
  if (::testing::Test::HasFatalFailure()) return;
  u.expect_no_fallback_at_any_split();
  // The kept row maxes are the rows' exact maxes (s units).
  const std::vector<float> kept = u.kept_row_max();
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_NEAR(kept[i], u.row_max_[i], 1e-3 * (1 + std::fabs(u.row_max_[i])))
        << name(c) << " row " << i;
}

void add_unified_decode_cases(std::vector<test::OpCase>& cases) {
  for (DType dtype : test::op_dtypes()) {
    int offset = 0;
    uint32_t seed = 100;  // the old sweep's seeds: 110, 120, ... in case order
    std::vector<Case> sweep;
    for (int D : {8, 64, 128})
      for (int group : {1, 2, 4, 8})
        for (int batch : {1, 3, 8}) {
          Case c;
          c.batch = batch, c.group = group, c.head_dim = D;
          for (int b = 0; b < batch; ++b) c.lengths.push_back(kLengths[(b + offset) % 6]);
          ++offset;
          sweep.push_back(c);
        }
    sweep.push_back({3, 2, 3, 40, {97, 1025, 2}, false});  // a head_dim without a template
    sweep.push_back({3, 2, 2, 128, {65, 1025, 1}, true});  // the generic kernel at 128
    for (size_t i = 0; i < sweep.size(); ++i) {
      const Case c = sweep[i];
      const uint32_t case_seed = seed += 10;
      cases.push_back({"attention_decode_unified",
                       test::shape_name({{"case", static_cast<long long>(i)}, {"D", c.head_dim},
                                         {"group", c.group}, {"batch", c.batch},
                                         {"misaligned", c.misalign_q}}),
                       dtype, [=](test::OpEnv& e) { check_unified_sweep(e, c, case_seed); }, {}});
    }
  }
}
FDPP_REGISTER_OP_CASES(add_unified_decode_cases);

// φ far below (m − φ = +200: 2^288 overflows fp32) or far above (m − φ = −200: every term
// flushes to 0) in some heads: exactly those rows are recomputed, each counted once.
TEST_P(UnifiedDecode, FarFromPhiRowsAreRecomputedAndCounted) {
  for (int D : {128, 64, 8}) {
    Case c{3, 2, 4, D, {1025, 65, 1}, false};
    prepare(c, 7 + D);
    upload();
    if (HasFatalFailure()) return;
    for (int splits : {0, 1, 7, 40}) {
      for (float far : {-200.f, 200.f}) {
        std::vector<float> phi = zeros();
        int marked = 0;
        for (int h = 0; h < H_; h += 3) phi[h] = far, ++marked;  // heads 0, 3, 6
        const std::string what = fmt::format("D {} splits {} φ {}", D, splits, far);
        EXPECT_EQ(run(phi, false, splits, what), int64_t{c.batch} * marked) << what;
        // Every head far: every row.
        EXPECT_EQ(run(std::vector<float>(H_, far), false, splits, what + " all heads"),
                  int64_t{c.batch} * H_)
            << what;
      }
    }
  }
}

// One key with s = +600 (all others |s| ~ 1) in every head of KV head 0 of sequence 0: only
// those rows leave φ = 0's range; with splits only the sink's split is redone.
TEST_P(UnifiedDecode, SinkKeyRowsAreRecomputed) {
  for (int D : {128, 8}) {
    Case c{2, 2, 2, D, {1025, 97}, false};
    prepare(c, 31 + D);
    const float Q = 64.f;
    for (int g = 0; g < c.group; ++g) set_q_one_hot(0, g, Q);  // heads of KV head 0
    // Key 500 of sequence 0, KV head 0: s = Q·k0·scale = 600.
    set_k0(0, 0, 500, 600.f / (Q * scale()));
    upload();
    if (HasFatalFailure()) return;
    EXPECT_GT(row_max_[0], 500.f);
    for (int splits : {0, 1, 7, 40}) {
      const std::string what = fmt::format("D {} splits {}", D, splits);
      EXPECT_EQ(run(zeros(), false, splits, what), c.group) << what;
    }
  }
}

// One key at s = 0, all others at s ≈ −1000: the rest underflows to 0 harmlessly, the row is
// in range (m − φ = 0) and is NOT recomputed; the output is that key's value.
TEST_P(UnifiedDecode, AllButOneKeyFarBelowNeedsNoFallback) {
  Case c{1, 1, 2, 128, {1025}, false};
  prepare(c, 57);
  const float Q = 64.f;
  for (int h = 0; h < H_; ++h) set_q_one_hot(0, h, Q);
  for (int j = 0; j < 1025; ++j) set_k0(0, 0, j, j == 700 ? 0.f : -1000.f / (Q * scale()));
  upload();
  if (HasFatalFailure()) return;
  for (int splits : {0, 1, 7, 40})
    EXPECT_EQ(run(zeros(), false, splits, fmt::format("splits {}", splits)), 0);
}

// Length 1 and sequences much shorter than max_length: most splits are empty, in range and
// out of range alike.
TEST_P(UnifiedDecode, EmptySplitsAndLengthOne) {
  Case c{3, 2, 2, 128, {1, 2, 1025}, false};
  prepare(c, 77);
  upload();
  if (HasFatalFailure()) return;
  for (int splits : {1, 40, kDecodeMaxSplits}) {
    EXPECT_EQ(run(zeros(), false, splits, fmt::format("splits {} in range", splits)), 0);
    EXPECT_EQ(run(std::vector<float>(H_, -300.f), false, splits,
                  fmt::format("splits {} out of range", splits)),
              int64_t{c.batch} * H_);
  }
}

// The tensor-core kernel (head_dim 64, 128) rounds P = 2^(t − φ) to the element type before
// the P·V mma, so its range is fp16's [L − 14, 15.95] (bf16: [L − 118, 111 − L]) in log2
// units, not fp32's: a row whose max sits 20 above φ overflows fp16 P (2^20 > 65504) and must be
// recomputed, as must one 2 below L − 14 (its terms would sink into fp16 subnormals); bf16
// holds both. 14 above φ is fine in both. φ is set per head from the exact row max (batch 1),
// so m − φ is what the test asks for, up to the rounding of the kernel's fp32 scores.
TEST_P(UnifiedDecode, TensorCoreRangeFollowsTheTypeOfP) {
  const bool f16 = dt() == DType::kF16;
  for (int D : {64, 128})
    for (int group : {1, 3, 8}) {
      Case c{1, 2, group, D, {1025}, false};
      prepare(c, 300 + D + group);
      upload();
      if (HasFatalFailure()) return;
      const float L = 11.f;  // ceil(log2(1025))
      for (float above : {20.f, 14.f, L - 16.f}) {
        std::vector<float> phi(H_);
        for (int h = 0; h < H_; ++h) phi[h] = row_max_[h] - above * kLn2;
        const bool in_range = f16 ? (above <= 15.95f && above >= L - 14.f) : true;
        for (int splits : {0, 1, 7, 40}) {
          const std::string what =
              fmt::format("D {} group {} m - φ = {} splits {}", D, group, above, splits);
          EXPECT_EQ(run(phi, false, splits, what), in_range ? 0 : int64_t{H_}) << what;
        }
      }
    }
}

// The range's edges move with ceil(log2(len)) (softmax_range.h), which the kernels compute
// in device code: rows half a unit inside and outside each edge, at lengths on both sides of
// a power of two, fall back exactly where the host's unified_range says, in the split
// kernel's own check (one split) and in the combine's (seven).
TEST_P(UnifiedDecode, RangeEdgesFollowTheLength) {
  const UnifiedType type = dt() == DType::kF16 ? UnifiedType::kF16P : UnifiedType::kBF16P;
  for (int len : {1024, 1025, 4096, 4097}) {
    Case c{1, 2, 4, 128, {len}, false};  // GQA group 4: the tensor-core kernel, P in dt()
    prepare(c, 700 + len);
    upload();
    if (HasFatalFailure()) return;
    const UnifiedRange r = unified_range(type, len);
    for (float above : {r.lo - 0.5f, r.lo + 0.5f, r.hi - 0.5f, r.hi + 0.5f}) {
      std::vector<float> phi(H_);
      for (int h = 0; h < H_; ++h) phi[h] = row_max_[h] - above * kLn2;
      const bool in_range = above >= r.lo && above <= r.hi;
      for (int splits : {1, 7}) {
        const std::string what = fmt::format("len {} m - φ = {} splits {}", len, above, splits);
        EXPECT_EQ(run(phi, false, splits, what), in_range ? 0 : int64_t{H_}) << what;
      }
    }
  }
}

// Every group size 1..8 and 16 through the tensor-core kernel, lengths ending inside a warp
// tile, calibrated and row-following φ: no fallback, results within the tolerance.
// At head_dim 128 with both warp tiles (narrow: 16 keys, wide: 32).
TEST_P(UnifiedDecode, TensorCoreKernelGroupsAndOddLengths) {
  using Tiles = cuda::CudaBackend::DecodeTiles;
  uint32_t seed = 500;
  for (int D : {64, 128})
    for (Tiles tiles : {Tiles::kNarrow, Tiles::kWide}) {
      if (D == 64 && tiles == Tiles::kWide) continue;  // narrow only at head_dim 64
      for (int group : {1, 2, 3, 4, 5, 6, 7, 8, 16}) {
        SCOPED_TRACE(tiles == Tiles::kWide ? "wide tiles" : "narrow tiles");
        Case c{3, 2, group, D, {17, 4097, 33}, false};
        if (group % 2) c.lengths = {31, 1, 129};
        prepare(c, seed += 10);
        upload();
        if (HasFatalFailure()) return;
        gpu_->set_decode_tiles_override(tiles);
        expect_no_fallback_at_any_split();
        gpu_->set_decode_tiles_override(Tiles::kAuto);
        if (HasFailure()) return;
      }
    }
}

// A captured graph recomputes and counts on every replay, reading φ from device memory.
TEST_P(UnifiedDecode, GraphReplayCountsFallbacks) {
  Case c{2, 2, 2, 128, {1025, 63}, false};
  prepare(c, 91);
  upload();
  if (HasFatalFailure()) return;
  std::vector<float> phi = zeros();
  phi[1] = 250.f;  // head 1 of both sequences out of range
  EXPECT_EQ(run(phi, false, 0, "graph", /*use_graph=*/true), c.batch);
  EXPECT_EQ(run(zeros(), true, 0, "graph, follow", /*use_graph=*/true), 0);
}

}  // namespace
}  // namespace fdpp
