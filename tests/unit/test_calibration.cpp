// The host side of the unified-max softmax (design.md, Technique 1), in CI: the safe range
// [a, b] per type and its derivation's edge cases, the score histogram and its quantiles, the
// φ fit and the fallback-rate simulations, the calibration file (round trip, every malformed
// case a clear error, a wrong layer count refused against the model), the CPU backend's exact
// score statistics, fdpp calibrate on stories260K and an engine that loads its file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cpu/ops.h"
#include "dispatch/softmax_range.h"
#include "common/test_util.h"
#include "core/half.h"
#include "fdpp/engine.h"
#include "model/config.h"
#include "tuning/calibration.h"
#include "tuning/score_analysis.h"
#include "tuning/score_statistics.h"

namespace fdpp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- the safe range --------------------------------------------------------------------------

TEST(SoftmaxRange, CeilLog2) {
  EXPECT_EQ(ceil_log2(0), 0);
  EXPECT_EQ(ceil_log2(1), 0);
  EXPECT_EQ(ceil_log2(2), 1);
  EXPECT_EQ(ceil_log2(3), 2);
  EXPECT_EQ(ceil_log2(4), 2);
  EXPECT_EQ(ceil_log2(5), 3);
  EXPECT_EQ(ceil_log2(1025), 11);
  EXPECT_EQ(ceil_log2(32768), 15);
  EXPECT_EQ(ceil_log2(32769), 16);
}

TEST(SoftmaxRange, BoundsPerType) {
  const UnifiedRange f32_1 = unified_range(UnifiedType::kF32, 1);
  EXPECT_EQ(f32_1.lo, -102.f);
  EXPECT_EQ(f32_1.hi, 111.f);
  const UnifiedRange f32_32k = unified_range(UnifiedType::kF32, 32768);
  EXPECT_EQ(f32_32k.lo, -87.f);
  EXPECT_EQ(f32_32k.hi, 96.f);
  // In s units, the design's "≈ −60 .. 88 minus log(length)" at 32K.
  EXPECT_NEAR(f32_32k.lo * kLn2, -60.3, 0.1);
  EXPECT_NEAR(f32_32k.hi * kLn2, 66.5, 0.1);
  const UnifiedRange p16 = unified_range(UnifiedType::kF16P, 1024);
  EXPECT_EQ(p16.lo, -4.f);
  EXPECT_EQ(p16.hi, 15.95f);
  EXPECT_NEAR(p16.hi * kLn2, 11.06, 0.01);  // the paper's "fp16 overflows above ≈ 11"
  EXPECT_EQ(unified_range(UnifiedType::kF16P, 8192).lo, -1.f);
  const UnifiedRange pb16 = unified_range(UnifiedType::kBF16P, 1);
  EXPECT_EQ(pb16.lo, -118.f);
  EXPECT_EQ(pb16.hi, 111.f);
  EXPECT_EQ(unified_range_center(UnifiedType::kF32, 1), 4.5f);
  EXPECT_EQ(unified_range_center(UnifiedType::kF32, 100000), 4.5f);
}

TEST(SoftmaxRange, TheBoundsHoldInTheirTypes) {
  // fp32 top: len · 2^b · 2^16 (the largest fp16 |v|) stays finite; one more bit at the
  // longest length the decode kernels take could not be guaranteed.
  for (int64_t len : {int64_t{1}, int64_t{1000}, int64_t{1} << 20}) {
    const UnifiedRange r = unified_range(UnifiedType::kF32, len);
    const double worst = std::ldexp(1.0, ceil_log2(len)) * std::exp2(r.hi) * 65536.0;
    EXPECT_TRUE(std::isfinite(static_cast<float>(worst))) << len;
    // bottom: len · 2^-126 lost against a den >= 2^lo is at most fp32's half ulp.
    EXPECT_LE(std::ldexp(1.0, ceil_log2(len)) * std::exp2(-126.0) / std::exp2(r.lo),
              std::exp2(-24.0) * 1.0000001)
        << len;
  }
  // fp16 P: 2^hi rounds to a finite fp16, 2^16 does not.
  EXPECT_TRUE(std::isfinite(f16_to_f32(f32_to_f16(std::exp2(15.95f)))));
  EXPECT_FALSE(std::isfinite(f16_to_f32(f32_to_f16(std::exp2(16.f)))));
  // ... and the subnormal loss len · 2^-25 against 2^lo is fp16's half ulp.
  for (int64_t len : {1, 97, 1025, 8192}) {
    const UnifiedRange r = unified_range(UnifiedType::kF16P, len);
    EXPECT_LE(std::ldexp(1.0, ceil_log2(len)) * std::exp2(-25.0) / std::exp2(r.lo),
              std::exp2(-11.0) * 1.0000001);
  }
}

TEST(SoftmaxRange, RowCheck) {
  EXPECT_TRUE(unified_row_in_range(UnifiedType::kF32, 100, 0.f));
  EXPECT_TRUE(unified_row_in_range(UnifiedType::kF32, 100, 104.f));   // 111 - 7
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF32, 100, 104.5f));
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF32, 100, -95.5f));  // 7 - 102
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF32, 100, std::nanf("")));
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF32, 100, kInf));
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF16P, 1, 16.f));
  EXPECT_TRUE(unified_row_in_range(UnifiedType::kF16P, 1, -14.f));
  EXPECT_FALSE(unified_row_in_range(UnifiedType::kF16P, 1, -14.01f));
}

// ---- histogram, quantiles, φ fit ---------------------------------------------------------------

TEST(ScoreHistogram, Bins) {
  EXPECT_EQ(score_bin(kScoreHistMin), 0);
  EXPECT_EQ(score_bin(-5000.f), 0);
  EXPECT_EQ(score_bin(5000.f), kScoreBins - 1);
  EXPECT_EQ(score_bin(std::nanf("")), 0);
  EXPECT_EQ(score_bin(0.f), kScoreBins / 2);
  EXPECT_EQ(score_bin(0.124f), kScoreBins / 2);
  EXPECT_EQ(score_bin(0.125f), kScoreBins / 2 + 1);
  EXPECT_EQ(score_bin(-0.01f), kScoreBins / 2 - 1);
  for (int i : {0, 1, 100, kScoreBins / 2, kScoreBins - 1})
    EXPECT_EQ(score_bin(score_bin_lower(i)), i);
}

TEST(ScoreHistogram, QuantilesOfKnownSamples) {
  std::vector<uint64_t> hist(kScoreBins, 0);
  EXPECT_TRUE(std::isnan(histogram_quantile(hist, 0.5, 0, 1)));
  // 100000 values uniform in [-10, 30).
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-10.f, 30.f);
  float lo = kInf, hi = -kInf;
  for (int i = 0; i < 100000; ++i) {
    const float x = u(rng);
    ++hist[score_bin(x)];
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_NEAR(histogram_quantile(hist, 0.5, lo, hi), 10.0, 0.5);
  EXPECT_NEAR(histogram_quantile(hist, 0.25, lo, hi), 0.0, 0.5);
  EXPECT_NEAR(histogram_quantile(hist, 0.00005, lo, hi), -10.0, 0.2);
  EXPECT_NEAR(histogram_quantile(hist, 0.99995, lo, hi), 30.0, 0.2);
  // Clamped to the exact extremes the edge bins cannot tell.
  EXPECT_EQ(histogram_quantile(hist, 0.0, lo, hi), lo);
  EXPECT_LE(histogram_quantile(hist, 1.0, lo, hi), hi);
  std::vector<uint64_t> one(kScoreBins, 0);
  one[score_bin(3000.f)] = 7;  // clamped into the last bin: only the extremes are known
  const double q = histogram_quantile(one, 0.5, 2999.0, 3000.0);
  EXPECT_GE(q, 2999.0);
  EXPECT_LE(q, 3000.0);
}

TEST(PhiFit, KeepsTheMostRows) {
  EXPECT_EQ(fit_phi({}, UnifiedType::kF16P), 0.f);
  // 900 rows around m = 5 and 100 rows at m = 60: no fp16-P φ covers both (width ≈ 20 s
  // units); the fit covers the 900.
  std::vector<ScoreRow> rows;
  for (int i = 0; i < 900; ++i) rows.push_back({5.f + 0.001f * i, 100});
  for (int i = 0; i < 100; ++i) rows.push_back({60.f, 100});
  const float phi = fit_phi(rows, UnifiedType::kF16P);
  EXPECT_NEAR(fallback_rate(rows, phi, UnifiedType::kF16P), 0.1, 1e-9);
  for (int i = 0; i < 900; ++i) EXPECT_TRUE(row_passes(rows[i], phi, UnifiedType::kF16P));
  // One row: the middle of its interval, i.e. m − φ at the middle of the range.
  const float one = fit_phi({{2.f, 1025}}, UnifiedType::kF16P);
  EXPECT_NEAR((2.f - one) * kLog2e, unified_range_center(UnifiedType::kF16P, 1025), 1e-3);
  // The fp32 range takes both clusters.
  EXPECT_EQ(fallback_rate(rows, fit_phi(rows, UnifiedType::kF32), UnifiedType::kF32), 0.0);
}

TEST(PhiFit, RowFollowingSimulation) {
  // Two heads, 6 positions; head 1 jumps by +200 (s units) at t = 3 and back at t = 4.
  std::vector<float> seq;
  for (int t = 0; t < 6; ++t) {
    seq.push_back(1.f + 0.1f * t);
    seq.push_back(t == 3 ? 201.f : 1.f);
  }
  int64_t counted = 0;
  const double rate = follow_fallback_rate({seq}, 2, UnifiedType::kF32, &counted);
  EXPECT_EQ(counted, 10);          // t = 1..5, two heads
  EXPECT_DOUBLE_EQ(rate, 2 / 10.0);  // t = 3 (up 200) and t = 4 (down 200)
  EXPECT_DOUBLE_EQ(follow_fallback_rate({seq}, 2, UnifiedType::kBF16P), 2 / 10.0);
  EXPECT_EQ(follow_fallback_rate({}, 2, UnifiedType::kF32), 0.0);
}

// ---- the calibration file -----------------------------------------------------------------------

Calibration small_calibration() {
  Calibration c;
  c.fingerprint = "0123456789abcdef";
  c.model_type = "llama";
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.text = "built-in";
  c.tokens = 100;
  c.sequences = 1;
  c.layers.resize(2);
  c.layers[0].phi = 1.5f;
  c.layers[0].phi_kv_heads = {1.f, 2.f};
  c.layers[1].phi = -3.25f;
  c.layers[1].phi_kv_heads = {-3.f, -4.f};
  c.layers[1].fallback_rate["decode_follow"] = 0.01;
  return c;
}

TEST(CalibrationFile, RoundTrip) {
  const Calibration c = small_calibration();
  auto back = parse_calibration(serialize_calibration(c), "test");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->fingerprint, c.fingerprint);
  EXPECT_EQ(back->num_layers, 2);
  EXPECT_EQ(back->layers[1].phi, -3.25f);
  EXPECT_EQ(back->layers[0].phi_kv_heads, c.layers[0].phi_kv_heads);
  EXPECT_EQ(back->layers[1].fallback_rate.at("decode_follow"), 0.01);
  EXPECT_EQ(calibration_phi(*back), (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, -3.25f, -3.25f,
                                                        -3.25f, -3.25f}));
  back->granularity = "kv_head";
  EXPECT_EQ(calibration_phi(*back),
            (std::vector<float>{1.f, 1.f, 2.f, 2.f, -3.f, -3.f, -4.f, -4.f}));
  const auto path = test::scratch_dir("calibration_file") / "sub" / "c.json";
  ASSERT_TRUE(save_calibration(c, path).ok());
  auto loaded = load_calibration(path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->layers[0].phi, 1.5f);
  EXPECT_EQ(load_calibration(path.parent_path() / "missing.json").status().code(),
            StatusCode::kNotFound);
}

// Each malformed file is an InvalidArgument whose message names the file and the fault.
TEST(CalibrationFile, MalformedFilesAreClearErrors) {
  const auto j = nlohmann::json::parse(serialize_calibration(small_calibration()));
  const auto expect_error = [](const std::string& text, const std::string& mention) {
    auto r = parse_calibration(text, "FILE");
    ASSERT_FALSE(r.ok()) << mention;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("calibration FILE"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(mention), std::string::npos) << r.status().message();
  };
  expect_error("{not json", "not JSON");
  expect_error("[1, 2]", "not a JSON object");
  auto m = j;
  m["format"] = "something-else";
  expect_error(m.dump(), "\"format\"");
  m = j;
  m["version"] = 2;
  expect_error(m.dump(), "version 2");
  m = j;
  m.erase("model");
  expect_error(m.dump(), "\"model\"");
  m = j;
  m["model"]["num_layers"] = "two";
  expect_error(m.dump(), "\"num_layers\" must be an integer");
  m = j;
  m["layers"].erase(1);
  expect_error(m.dump(), "1 entries in \"layers\" for num_layers 2");
  m = j;
  m["layers"][1]["phi"] = "x";
  expect_error(m.dump(), "layers[1].phi must be a number");
  m = j;
  m["layers"][0]["phi"] = 1e30;
  expect_error(m.dump(), "is not a finite score");
  m = j;
  m["layers"][0]["phi_kv_heads"] = {1.0};
  expect_error(m.dump(), "num_kv_heads = 2 values");
  m = j;
  m["granularity"] = "kv_head";
  m["layers"][1].erase("phi_kv_heads");
  expect_error(m.dump(), "granularity is kv_head");
  m = j;
  m["granularity"] = "head";
  expect_error(m.dump(), "\"granularity\"");
  m = j;
  m["model"]["num_kv_heads"] = 3;
  expect_error(m.dump(), "not a multiple");
}

TEST(CalibrationFile, MustFitTheModel) {
  ModelConfig cfg;
  cfg.num_layers = 2;
  cfg.num_heads = 4;
  cfg.num_kv_heads = 2;
  cfg.head_dim = 8;
  Calibration c = small_calibration();
  EXPECT_TRUE(check_calibration_fits(c, cfg, "F").ok());
  cfg.num_layers = 32;
  const Status st = check_calibration_fits(c, cfg, "F");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("num_layers 2, the model has 32"), std::string::npos)
      << st.message();
  cfg.num_layers = 2;
  cfg.head_dim = 64;
  EXPECT_FALSE(check_calibration_fits(c, cfg, "F").ok());
}

TEST(CalibrationFile, FingerprintAndPaths) {
  const auto stories = test::models_dir() / "stories260K";
  auto a = model_fingerprint(stories), b = model_fingerprint(stories);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->size(), 16u);
  // The same weights with another config are another model.
  const auto dir = test::scratch_dir("fingerprint");
  std::filesystem::copy_file(stories / "model.safetensors", dir / "model.safetensors");
  test::write_file(dir / "config.json", test::read_file(stories / "config.json") + " ");
  auto c = model_fingerprint(dir);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
  EXPECT_EQ(model_fingerprint(dir / "nothing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(calibration_path_in_model(dir), dir / "fdpp_calibration.json");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(calibration_path_in_cache("ab"),
            std::filesystem::path("/tmp/xdg/fdpp/calibration/ab.json"));
  unsetenv("XDG_CACHE_HOME");
  EXPECT_TRUE(directory_writable(dir));
}

TEST(CalibrationFile, BuiltInTextIsLongEnough) {
  const std::string text = builtin_calibration_text();
  EXPECT_GT(text.size(), 12000u);
  EXPECT_EQ(text.find('\0'), std::string::npos);
}

// ---- statistics: the CPU backend's side output, build_calibration ----------------------------

TEST(ScoreStatistics, CpuSideOutputIsExact) {
  auto be = make_cpu_backend();
  const KVCacheLayout l{1, 2, 2, 40, 16};
  auto cache = be->alloc_kv_cache(l);
  ASSERT_TRUE(cache.ok());
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.f, 3.f);
  auto* kc = static_cast<float*>(cache->k.data());
  for (int64_t i = 0; i < l.elements_per_layer(); ++i) {
    kc[i] = n(rng);
    static_cast<float*>(cache->v.data())[i] = n(rng);
  }
  const int T = 9, start = 5, H = 4;
  std::vector<float> q(T * H * 16), out(q.size());
  for (float& x : q) x = n(rng);
  std::vector<int32_t> hist(kScoreBins, 0);
  std::vector<float> minmax{kInf, -kInf}, row_max(T * H, 0.f);
  AttentionPrefillArgs a;
  a.q = Tensor(q.data(), DType::kF32, Device::kCPU, {T, H, 16});
  a.out = Tensor(out.data(), DType::kF32, Device::kCPU, {T, H, 16});
  a.cache = &*cache;
  a.slot = 1;
  a.start_pos = start;
  a.scale = 0.25f;
  a.stats.histogram = Tensor(hist.data(), DType::kI32, Device::kCPU, {kScoreBins});
  a.stats.minmax = Tensor(minmax.data(), DType::kF32, Device::kCPU, {2});
  a.stats.row_max = Tensor(row_max.data(), DType::kF32, Device::kCPU, {T, H});
  ASSERT_TRUE(be->attention_prefill(a).ok());
  std::vector<int32_t> want(kScoreBins, 0);
  float lo = kInf, hi = -kInf;
  int64_t total = 0;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      float m = -kInf;
      for (int j = 0; j <= start + t; ++j) {
        const float s = static_cast<float>(
            0.25f * cpu::dot(q.data() + (t * H + h) * 16, kc + l.offset(0, 1, h / 2, j), 16));
        ++want[score_bin(s)];
        m = std::max(m, s);
        lo = std::min(lo, s);
        hi = std::max(hi, s);
        ++total;
      }
      EXPECT_EQ(row_max[t * H + h], m);
    }
  EXPECT_EQ(hist, want);
  EXPECT_EQ(minmax[0], lo);
  EXPECT_EQ(minmax[1], hi);
  EXPECT_EQ(total, int64_t{H} * (T * start + T * (T + 1) / 2));
}

TEST(ScoreStatistics, BuildCalibration) {
  ScoreStatistics s;
  s.n_heads = 2;
  s.n_kv_heads = 1;
  s.tokens = 50;
  s.layers.resize(1);
  LayerScoreStats& L = s.layers[0];
  L.histogram.assign(kScoreBins, 0);
  L.min = -20;
  L.max = 9;
  for (int i = 0; i < 1000; ++i) ++L.histogram[score_bin(-20.f + 29.f * i / 999)];
  std::vector<float> seq;
  for (int t = 0; t < 50; ++t) seq.insert(seq.end(), {3.f + 0.01f * t, 4.f});
  L.sequences.push_back(seq);
  const Calibration c = build_calibration(s, 0.99);
  ASSERT_EQ(c.layers.size(), 1u);
  const CalibrationLayer& cl = c.layers[0];
  EXPECT_EQ(cl.score_min, -20);
  EXPECT_EQ(cl.score_max, 9);
  EXPECT_NEAR(cl.score_lo, -20 + 0.145, 0.2);
  EXPECT_NEAR(cl.score_hi, 9 - 0.145, 0.2);
  EXPECT_FLOAT_EQ(cl.row_max_min, 3.f);
  EXPECT_FLOAT_EQ(cl.row_max_max, 4.f);
  EXPECT_EQ(cl.fallback_rate.at("prefill_fp16p"), 0.0);
  EXPECT_EQ(cl.fallback_rate.at("decode_follow"), 0.0);
  EXPECT_EQ(cl.phi_kv_heads.size(), 1u);
  EXPECT_EQ(c.granularity, "layer");
  EXPECT_EQ(c.num_heads, 2);
}

// ---- fdpp calibrate on stories260K (CPU), and engines that use its file -------------------------

TEST(Calibrate, CliWritesAFileTheEngineLoads) {
  const auto dir = test::scratch_dir("calibrate_cli");
  const auto file = dir / "cal.json";
  const std::string cmd = test::fdpp_binary().string() + " calibrate -m " +
                          (test::models_dir() / "stories260K").string() +
                          " --device cpu --tokens 1500 --out " + file.string() + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_file(dir / "err");
  const std::string out = test::read_file(dir / "out");
  EXPECT_NE(out.find("99.99% of them in ["), std::string::npos) << out;
  EXPECT_NE(out.find("written: " + file.string()), std::string::npos) << out;
  auto c = load_calibration(file);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->num_layers, 5);
  EXPECT_EQ(c->tokens, 1500 + c->sequences);  // + a BOS per sequence

  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.softmax = "auto";
  o.calibration = file;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto st = (*e)->softmax_stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->prefill, "unified");
  EXPECT_EQ(st->phi, "calibrated");
  EXPECT_EQ(st->phi_source, "calibration " + file.string());
  EXPECT_EQ(st->decode_fallbacks.size(), 5u);

  // A file for another shape is refused with the reason.
  Calibration wrong = *c;
  wrong.num_layers = 4;
  wrong.layers.pop_back();
  ASSERT_TRUE(save_calibration(wrong, dir / "wrong.json").ok());
  o.calibration = dir / "wrong.json";
  auto bad = Engine::create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("num_layers 4, the model has 5"), std::string::npos)
      << bad.status().message();
  test::write_file(dir / "broken.json", "{");
  o.calibration = dir / "broken.json";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
}

// A copy of stories260K with no calibration file beside it, and a cache directory of its own
// (so that a file someone wrote next to the shared model cannot change what these tests see).
std::filesystem::path isolated_stories(const std::string& tag) {
  const auto dir = test::scratch_dir(tag);
  const auto src = test::models_dir() / "stories260K";
  std::filesystem::create_directories(dir / "model");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors",
                        "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"})
    std::filesystem::copy_file(src / f, dir / "model" / f);
  setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  return dir / "model";
}

TEST(Calibrate, EngineOptionsAreChecked) {
  EngineOptions o;
  o.model_dir = isolated_stories("calibrate_options");
  o.softmax = "fast";
  EXPECT_NE(Engine::create(o).status().message().find("--softmax fast"), std::string::npos);
  o.softmax = "unified";
  o.phi = "median";
  EXPECT_NE(Engine::create(o).status().message().find("--phi median"), std::string::npos);
  // Without a calibration, sync stays sync and unified runs with φ = 0 (the CPU ignores both:
  // its attention is the exact specification).
  o.phi = "follow";
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok());
  auto st = (*e)->softmax_stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->phi_source, "default 0");
  EXPECT_EQ(st->phi, "follow");
  unsetenv("XDG_CACHE_HOME");
}

// The engine finds a calibration by itself in the cache directory (the model folder may be
// read-only), and skips one made for other weights with a warning.
TEST(Calibrate, EngineFindsTheCachedFile) {
  EngineOptions o;
  o.model_dir = isolated_stories("calibrate_cache");
  o.softmax = "auto";
  auto fp = model_fingerprint(o.model_dir);
  ASSERT_TRUE(fp.ok());
  Calibration c;
  c.fingerprint = *fp;
  c.num_layers = 5;
  c.num_heads = 8;
  c.num_kv_heads = 4;
  c.head_dim = 8;
  c.layers.resize(5);
  ASSERT_TRUE(save_calibration(c, calibration_path_in_cache(*fp)).ok());
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto st = (*e)->softmax_stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->phi_source, "calibration " + calibration_path_in_cache(*fp).string());
  EXPECT_EQ(st->prefill, "unified");
  c.fingerprint = "ffffffffffffffff";  // other weights
  ASSERT_TRUE(save_calibration(c, calibration_path_in_cache(*fp)).ok());
  auto stale = Engine::create(o);
  ASSERT_TRUE(stale.ok());
  auto st2 = (*stale)->softmax_stats();
  ASSERT_TRUE(st2.ok());
  EXPECT_EQ(st2->phi_source, "default 0");
  EXPECT_EQ(st2->prefill, "sync");  // auto without a calibration
  EXPECT_EQ(st2->phi, "follow");
  unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace fdpp
