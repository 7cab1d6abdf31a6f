// Synthetic GEMM timings and tables shared by the dispatch-table tests
// (test_gemm_table_lookup.cpp, test_gemm_table_tuning.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/gemm_timing.h"
#include "dispatch/gemm_plan.h"
#include "dispatch/gemm_table.h"
#include "tuning/gemm_table_derive.h"

namespace fdpp::gemm_table_test {

inline const GpuIdentity kH200{"NVIDIA H200", 132, 9, 0, 13000};

constexpr ImplChoice kGemv{GemmImpl::kGemv, -1, 0};
constexpr ImplChoice kCublas{GemmImpl::kCublas, -1, 0};
constexpr ImplChoice kCublasAlgo2{GemmImpl::kCublas, -1, 0, 2};  // the heuristic's third answer
constexpr ImplChoice flat(int config, int splits = 0) { return {GemmImpl::kFlat, config, splits}; }

// The tuner's M sweep: dense to 64, then sparse.
inline std::vector<int> sweep_ms() {
  std::vector<int> ms;
  for (int m = 1; m <= 64; ++m) ms.push_back(m);
  for (int m : {80, 96, 112, 128, 160, 192, 256, 320, 384, 448, 512}) ms.push_back(m);
  return ms;
}

// Timings of every implementation that can run each M (GEMV up to 8, a flat
// configuration up to its n8 tiles, cuBLASLt always), from a cost model; a model
// returning <= 0 leaves that run out.
using CostModel = std::function<double(const ImplChoice&, int m)>;
inline void add_sweep(std::vector<GemmTiming>& out, const std::string& name, int64_t n, int64_t k,
               const CostModel& cost, const std::vector<int>& ms = sweep_ms()) {
  for (int m : ms) {
    std::vector<ImplChoice> run;
    if (m <= GemvConfig::kMaxM) run.push_back(kGemv);
    for (int c = 0; c < kFlatConfigCount; ++c)
      if (m <= kFlatConfigs[c].max_m()) run.push_back(flat(c));
    run.push_back(kCublas);
    for (const ImplChoice& c : run) {
      const double us = cost(c, m);
      if (us > 0) out.push_back({name, n, k, m, c, true, us});
    }
  }
}

// A plausible shape: GEMV cheapest to M = 4, flat configurations to M = 49,
// cuBLASLt above (flat m64 is 25 + 0.2 M, cuBLASLt 30 + 0.1 M: they cross at 50).
inline double plausible(const ImplChoice& c, int m) {
  switch (c.impl) {
    case GemmImpl::kGemv: return 10.0 + 2.0 * m;         // 12 .. 26
    case GemmImpl::kFlat:
      switch (c.config) {
        case 0: return 19.0;                             // M <= 8
        case 1: return 19.5;                             // M <= 8
        case 2: return 21.0;                             // M <= 16
        case 3: return 23.0 + 0.05 * m;                  // M <= 32
        default: return 25.0 + 0.2 * m + (m == 50 ? 0.01 : 0.0);  // M <= 64
      }
    case GemmImpl::kCublas: return 30.0 + 0.1 * m;
  }
  return -1;
}

inline TunedGemmTable derive_ok(const std::vector<GemmTiming>& t, DType dt = DType::kF16) {
  auto table = derive_gemm_table(t, kH200, dt);
  EXPECT_TRUE(table.ok()) << table.status().message();
  return table.ok() ? std::move(table).value() : TunedGemmTable{};
}

// ---- near ties the decode step settles ------------------------------------------------

// Two shapes of bf16 with every entry kind the JSON has: a flat win at a swept split,
// cuBLASLt's third heuristic answer, quoted model names.
inline TunedGemmTable two_shape_table() {
  std::vector<GemmTiming> t;
  add_sweep(t, "qkv", 12288, 4096, plausible);
  add_sweep(t, "down", 4096, 11008, [](const ImplChoice& c, int m) {
    return c.impl == GemmImpl::kFlat && c.config == 1 ? 1.0 : plausible(c, m);
  });
  t.push_back({"down", 4096, 11008, 3, flat(1, 6), false, 0.5});  // a swept split wins at 3
  t.push_back({"qkv", 12288, 4096, 512, kCublasAlgo2, true, 1.0});  // cuBLASLt's third answer
  TunedGemmTable table = derive_ok(t, DType::kBF16);
  table.created = "2026-12-01 10:00 UTC";
  table.models = {"/models/Llama-2-7b", "/models/with \"quotes\""};
  return table;
}

}  // namespace fdpp::gemm_table_test
