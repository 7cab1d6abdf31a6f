// The GEMM dispatch table as dispatch reads it (dispatch/gemm_table.h), in CI: lookups at
// the boundaries and between tuned M, missing shapes falling back to the built-in rule,
// the JSON file (round trip, every malformed case a clear error, another GPU or dtype
// refused), the built-in defaults, and the CPU engine's report. The tables come from
// synthetic timings (gemm_table_test_data.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "dispatch/gemm_plan.h"
#include "dispatch/gemm_table.h"
#include "fdpp/engine.h"
#include "gemm_table_test_data.h"

namespace fdpp {
namespace {

using namespace gemm_table_test;
namespace fs = std::filesystem;

// ---- lookups --------------------------------------------------------------------------

TEST(GemmTable, LookupBoundaries) {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, plausible);
  add_sweep(t, "o", 4096, 4096, plausible, {1, 2, 4, 8, 16, 32, 48});  // sparse, ends on flat
  const TunedGemmTable table = derive_ok(t);
  const GemmThresholds th = gemm_thresholds(table, *table.find(12288, 4096));
  ASSERT_EQ(th.m1, 4);
  ASSERT_EQ(th.m2, 49);
  auto qkv = [&](int64_t m) { return table.lookup(m, 12288, 4096, DType::kF16); };
  EXPECT_EQ(qkv(1), kGemv);
  EXPECT_EQ(qkv(th.m1), kGemv);
  EXPECT_EQ(qkv(th.m1 + 1), flat(0));
  EXPECT_EQ(qkv(th.m2), flat(4));
  EXPECT_EQ(qkv(th.m2 + 1), kCublas);
  EXPECT_EQ(qkv(512), kCublas);
  // Beyond the largest tuned M: cuBLASLt won there, so it serves every larger M.
  EXPECT_EQ(qkv(513), kCublas);
  EXPECT_EQ(qkv(1 << 20), kCublas);
  // Untuned M between tuned ones: the next tuned M above.
  EXPECT_EQ(qkv(70), qkv(80));
  EXPECT_EQ(qkv(500), qkv(512));
  // Nothing for M < 1, another dtype, another shape or nonsense N, K.
  EXPECT_EQ(qkv(0), std::nullopt);
  EXPECT_EQ(qkv(-3), std::nullopt);
  EXPECT_EQ(table.lookup(1, 12288, 4096, DType::kBF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, 12288, 4097, DType::kF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, int64_t{1} << 40, 4096, DType::kF16), std::nullopt);
  EXPECT_EQ(table.lookup(1, 0, 0, DType::kF16), std::nullopt);

  // "o" was tuned at 1, 2, 4, 8, 16, 32, 48: M = 3 takes M = 4's GEMV, M = 9..16 take 16's
  // m16 tile, which holds them; past 48 (a flat win) the table has nothing to say.
  auto o = [&](int64_t m) { return table.lookup(m, 4096, 4096, DType::kF16); };
  EXPECT_EQ(o(3), kGemv);
  EXPECT_EQ(o(5), flat(0));
  EXPECT_EQ(o(9), flat(2));
  EXPECT_EQ(o(17), flat(3));
  EXPECT_EQ(o(40), flat(4));
  EXPECT_EQ(o(48), flat(4));
  EXPECT_EQ(o(49), std::nullopt);
  EXPECT_EQ(gemm_thresholds(table, *table.find(4096, 4096)).m2, 48);
}

TEST(GemmTable, MissingShapeFallsBackToTheBuiltInRule) {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kCublas ? 1.0 : 2.0;  // a table that says cuBLASLt everywhere
  });
  const TunedGemmTable table = derive_ok(t);
  GemmDeviceTraits traits;
  traits.sm_count = 132;
  for (int m = 1; m <= GemvConfig::kMaxM; ++m) traits.gemv_ctas_per_sm[m - 1] = 3;
  for (int c = 0; c < kFlatConfigCount; ++c) traits.flat_ctas_per_sm[c] = 2;
  for (int64_t m : {1, 4, 5, 64, 65, 300}) {
    // The tuned shape follows the table ...
    const GemmPlan tuned = plan_gemm({m, 12288, 4096, DType::kF16, true}, GemmPolicy::kAuto,
                                     &table, traits);
    EXPECT_EQ(tuned.choice.impl, GemmImpl::kCublas) << m;
    // ... a shape it lacks plans exactly as with no table.
    const GemmProblem p{m, 4096, 11008, DType::kF16, true};
    EXPECT_EQ(plan_gemm(p, GemmPolicy::kAuto, &table, traits).choice,
              plan_gemm(p, GemmPolicy::kAuto, nullptr, traits).choice)
        << m;
  }
}

// ---- regret ---------------------------------------------------------------------------

// The worst point of a verification pass, read against the pass the table came from: the

// ---- the file ----------------------------------------------------------------------------

TEST(GemmTable, JsonRoundTrip) {
  const TunedGemmTable a = two_shape_table();
  const std::string text = serialize_gemm_table(a);
  auto b = parse_gemm_table(text, "test");
  ASSERT_TRUE(b.ok()) << b.status().message() << "\n" << text;
  EXPECT_EQ(b->gpu(), kH200);
  EXPECT_EQ(b->dtype(), DType::kBF16);
  EXPECT_EQ(b->created, a.created);
  EXPECT_EQ(b->models, a.models);
  ASSERT_EQ(b->shapes().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const GemmTableShape &x = a.shapes()[i], &y = b->shapes()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.n, y.n);
    EXPECT_EQ(x.k, y.k);
    ASSERT_EQ(x.entries.size(), y.entries.size());
    for (size_t e = 0; e < x.entries.size(); ++e) {
      EXPECT_EQ(x.entries[e].m, y.entries[e].m);
      EXPECT_EQ(x.entries[e].choice, y.entries[e].choice) << x.name << " M " << x.entries[e].m;
      EXPECT_NEAR(x.entries[e].us, y.entries[e].us, 1e-3);
    }
    for (int64_t m = 0; m <= 600; ++m)
      EXPECT_EQ(a.lookup(m, x.n, x.k, DType::kBF16), b->lookup(m, x.n, x.k, DType::kBF16)) << m;
  }
  EXPECT_EQ(b->lookup(3, 4096, 11008, DType::kBF16), flat(1, 6));
  EXPECT_EQ(b->lookup(512, 12288, 4096, DType::kBF16), kCublasAlgo2);
  EXPECT_EQ(b->lookup(448, 12288, 4096, DType::kBF16), kCublas);
  EXPECT_NE(text.find("\"impl\":\"cublas\",\"algo\":2"), std::string::npos) << text;
  EXPECT_EQ(serialize_gemm_table(*b), text);  // stable
  // The thresholds are written for people.
  EXPECT_NE(text.find("\"m1\": 4, \"m2\": 49"), std::string::npos) << text;

  const fs::path dir = test::scratch_dir("gemm_table_roundtrip");
  const fs::path file = dir / "sub" / "dir" / "t.json";
  ASSERT_TRUE(save_gemm_table(a, file).ok());  // creates the folders
  auto c = load_gemm_table(file);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(serialize_gemm_table(*c), text);
  for (const auto& e : fs::directory_iterator(file.parent_path()))
    EXPECT_EQ(e.path().filename(), "t.json") << "a temporary file was left behind";
  const auto missing = load_gemm_table(dir / "nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Replaces the first occurrence of `from` in the round-trip text.
std::string edited(const std::string& from, const std::string& to) {
  std::string s = serialize_gemm_table(two_shape_table());
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(GemmTable, MalformedFilesAreClearErrors) {
  const std::string good = serialize_gemm_table(two_shape_table());
  ASSERT_TRUE(parse_gemm_table(good, "t").ok());
  struct Case {
    std::string text;
    std::string says;  // part of the message
  };
  const std::vector<Case> cases = {
      {"", "not JSON"},
      {"{\"format\": ", "not JSON"},
      {good.substr(0, good.size() / 2), "not JSON"},
      {"[1, 2]", "not a JSON object"},
      {"{}", "\"format\""},
      {edited("fdpp-gemm-table", "fdpp-softmax-calibration"), "\"format\""},
      {edited("\"version\": 1", "\"version\": 2"), "version 2"},
      {edited("\"version\": 1", "\"version\": \"1\""), "\"version\""},
      {edited("\"gpu\": ", "\"gpu_\": "), "\"gpu\""},
      {edited("\"sm_count\":132", "\"sm_count\":-1"), "\"sm_count\""},
      {edited("\"compute_capability\":\"9.0\"", "\"compute_capability\":\"9\""), "compute_capability"},
      {edited("\"compute_capability\":\"9.0\"", "\"compute_capability\":\"9.0x\""), "compute_capability"},
      {edited("\"name\":\"NVIDIA H200\"", "\"name\":7"), "\"name\""},
      {edited("\"dtype\": \"bf16\"", "\"dtype\": \"f32\""), "\"dtype\""},
      {edited("\"dtype\": \"bf16\"", "\"dtype\": \"int4\""), "\"dtype\""},
      {edited("\"shapes\": [", "\"shapes\": {\"a\": ["), "not JSON"},
      {edited("\"shapes\": [", "\"shapez\": ["), "\"shapes\""},
      {edited("\"n\": 12288", "\"n\": 0"), "\"n\""},
      {edited("\"k\": 4096", "\"k\": 4096.5"), "\"k\""},
      {edited("\"n\": 4096, \"k\": 11008", "\"n\": 12288, \"k\": 4096"), "twice"},
      {edited("{\"m\":2,", "{\"m\":1,"), "ascend"},
      {edited("{\"m\":2,", "{\"m\":0,"), "\"m\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":\"gemm\""), "\"impl\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":3"), "\"impl\""},
      {edited("\"config\":\"n64k128s4m8\"", "\"config\":\"n64k128s9m8\""), "not compiled"},
      {edited(",\"config\":\"n64k128s4m8\"", ""), "\"config\""},
      {edited("\"splits\":6", "\"splits\":99"), "\"splits\""},
      {edited("\"algo\":2", "\"algo\":16"), "\"algo\""},
      {edited("\"algo\":2", "\"algo\":-1"), "\"algo\""},
      {edited("\"impl\":\"gemv\"", "\"impl\":\"gemv\",\"algo\":1"), "\"algo\""},
      {edited("\"entries\": [", "\"entries\": [] , \"x\": ["), "\"entries\""},
  };
  for (const Case& c : cases) {
    auto r = parse_gemm_table(c.text, "cache/gemm/x.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("cache/gemm/x.json"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << "expected '" << c.says << "' in: " << r.status().message();
  }
  // Unknown fields and missing documentation fields are fine.
  auto extra = parse_gemm_table(edited("\"created\"", "\"note\": [1], \"created_\""), "t");
  EXPECT_TRUE(extra.ok()) << extra.status().message();
}

TEST(GemmTable, WrongGpuOrDtypeIsRefused) {
  const TunedGemmTable t = two_shape_table();
  EXPECT_TRUE(check_gemm_table_matches(t, kH200, DType::kBF16).ok());
  for (GpuIdentity other : {GpuIdentity{"NVIDIA A100-SXM4-80GB", 108, 8, 0, 13000},
                            GpuIdentity{"NVIDIA H200", 66, 9, 0, 13000},  // a MIG slice
                            GpuIdentity{"NVIDIA H200", 132, 9, 0, 12080},
                            GpuIdentity{"NVIDIA H200", 132, 9, 1, 13000}}) {
    const Status s = check_gemm_table_matches(t, other, DType::kBF16);
    ASSERT_FALSE(s.ok()) << other.summary();
    EXPECT_NE(s.message().find(kH200.summary()), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(other.summary()), std::string::npos) << s.message();
  }
  const Status d = check_gemm_table_matches(t, kH200, DType::kF16);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("bf16"), std::string::npos) << d.message();
  EXPECT_EQ(kH200.summary(), "NVIDIA H200 (sm_90, 132 SMs, CUDA 13.0)");
}

// ---- built-in defaults ------------------------------------------------------------------------

TEST(GemmTable, BuiltInDefaults) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    auto b = builtin_gemm_table(dt);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->dtype(), dt);
    ASSERT_FALSE(b->shapes().empty());
    EXPECT_NE(b->gpu().name.find("H200"), std::string::npos);
    // The [N, K] of every linear layer of the four paper models are in it (o of Llama-2-7B,
    // ChatGLM2-6B and OPT-6.7B is one shape, as is the QKV of Llama-2-7B and OPT-6.7B).
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
             {12288, 4096}, {4096, 4096}, {22016, 4096}, {4096, 11008}, {32000, 4096},  // 7B
             {15360, 5120}, {5120, 5120}, {27648, 5120}, {5120, 13824}, {32000, 5120},  // 13B
             {4608, 4096}, {27392, 4096}, {4096, 13696}, {65024, 4096},  // ChatGLM2-6B
             {16384, 4096}, {4096, 16384}, {50272, 4096}})               // OPT-6.7B
      EXPECT_NE(b->find(n, k), nullptr) << n << " " << k;
  }
  auto b = builtin_gemm_table(DType::kF16);
  ASSERT_TRUE(b.ok());
  if (b->created.rfind("seed", 0) == 0) {
    // The seed restates the built-in rule: planning with it equals planning without it.
    GemmDeviceTraits traits;
    traits.sm_count = 132;
    for (int m = 1; m <= GemvConfig::kMaxM; ++m) traits.gemv_ctas_per_sm[m - 1] = 3;
    for (int c = 0; c < kFlatConfigCount; ++c) traits.flat_ctas_per_sm[c] = 2;
    for (const GemmTableShape& s : b->shapes()) {
      const GemmThresholds th = gemm_thresholds(*b, s);
      EXPECT_EQ(th.m1, kDefaultGemvMaxM) << s.name;
      EXPECT_EQ(th.m2, kDefaultFlatMaxM) << s.name;
      for (int64_t m = 1; m <= 700; ++m) {
        const GemmProblem p{m, s.n, s.k, DType::kF16, true};
        ASSERT_EQ(plan_gemm(p, GemmPolicy::kAuto, &*b, traits).choice,
                  plan_gemm(p, GemmPolicy::kAuto, nullptr, traits).choice)
            << s.name << " M " << m;
      }
    }
  }
}


// ---- the engine --------------------------------------------------------------------------------

TEST(GemmTable, CpuEngineReportsNoTable) {
  EngineOptions o;
  o.model_dir = test::models_dir() / "stories260K";
  o.gemm_table = "/nonexistent/table.json";  // the CPU backend has one linear(): ignored
  o.autotune = true;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)->gemm_table_source(), "none (CPU backend)");
  o.gemm = "fastest";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fdpp
