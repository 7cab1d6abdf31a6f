// The tuned GEMM dispatch table (design.md, Technique 3): per GPU and dtype, for
// each [N, K] shape a model multiplies by, which implementation (ImplA GEMV, an
// ImplB flat GEMM configuration with its split-K, or ImplC cuBLASLt) was fastest
// at each M. `fdpp tune` measures it and derives it (tuning/gemm_tune.h,
// tuning/gemm_table_derive.h); this file is what dispatch needs of it: the table,
// its lookup, and reading and writing it. CUDA-free, so CI tests all of it without a GPU.
//
// JSON (one file per GPU and dtype, holding every shape ever tuned on it):
//   {"format": "fdpp-gemm-table", "version": 1,
//    "gpu": {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0",
//            "cuda_runtime": 13000},
//    "dtype": "f16", "created": "2026-12-01 10:00 UTC", "models": ["…/Llama-2-7b"],
//    "shapes": [{"name": "qkv", "n": 12288, "k": 4096, "m1": 4, "m2": 64,
//                "entries": [{"m": 1, "impl": "gemv", "splits": 2, "us": 26.1},
//                            {"m": 5, "impl": "flat", "config": "n64k128s4m8", "splits": 3, …},
//                            {"m": 80, "impl": "cublas", "us": 61.0},
//                            {"m": 96, "impl": "default"}, …]}]}
// An entry covers the M values above the previous entry's up to its own "m". "default"
// defers to the built-in rule (dispatch/gemm_plan.h). "m1", "m2", "us", "created" and
// "models" document the run and are not trusted on load (m1/m2 are re-derived).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatch/gemm_plan.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp {

inline constexpr const char* kGemmTableFormat = "fdpp-gemm-table";
inline constexpr int kGemmTableVersion = 1;

// What a table is keyed by: the same kernels run at different speeds on another
// GPU model, SM count (a MIG slice, a cut-down part) or cuBLASLt release.
struct GpuIdentity {
  std::string name;  // "NVIDIA H200"
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int cuda_runtime = 0;  // 13000 for CUDA 13.0
  bool operator==(const GpuIdentity&) const = default;
  // "NVIDIA H200 (sm_90, 132 SMs, CUDA 13.0)"
  std::string summary() const;
  // "13.0"
  std::string cuda_version() const;
};

// One step of a shape's table: `choice` for every M in (previous entry's m, m].
// nullopt: the built-in rule decides ("default" in the JSON).
struct GemmTableEntry {
  int m = 0;
  std::optional<ImplChoice> choice;
  double us = 0;  // the measured time of `choice` at m (0: not measured)
};

struct GemmTableShape {
  std::string name;  // "qkv", or "o,down" when two layers share [N, K]
  int64_t n = 0, k = 0;
  std::vector<GemmTableEntry> entries;  // m strictly ascending, >= 1
};

class TunedGemmTable final : public GemmTable {
 public:
  TunedGemmTable() = default;
  // Validates the shapes (positive [N, K] that fit 32 bits, no shape twice, entries
  // ascending from M >= 1, flat configurations that exist) and builds the index.
  static Result<TunedGemmTable> create(GpuIdentity gpu, DType dtype,
                                       std::vector<GemmTableShape> shapes);

  // O(1): a hash of [N, K], then an array indexed by M. nullopt (the built-in rule)
  // for another dtype, a shape the table lacks, M < 1, a "default" entry, and M above
  // the largest tuned M unless the last entry is cuBLASLt: cuBLASLt winning at the
  // largest M says the GEMM is compute-bound there, which only grows with M, whereas
  // a GEMV or flat entry names a kernel that may not even hold a larger M.
  // An untuned M between two tuned ones takes the entry of the next tuned M above:
  // whatever ran that larger M also runs this one (a flat tile holding M_hi holds
  // M < M_hi, a GEMV compiled up to M_hi covers M), and each kernel's time only grows
  // with M, so the choice costs at most its measured time at M_hi. The entry below
  // may name a kernel that cannot run M at all (the m64 tile past M = 64).
  std::optional<ImplChoice> lookup(int64_t m, int64_t n, int64_t k, DType dtype) const override;

  const GpuIdentity& gpu() const { return gpu_; }
  DType dtype() const { return dtype_; }
  const std::vector<GemmTableShape>& shapes() const { return shapes_; }
  const GemmTableShape* find(int64_t n, int64_t k) const;

  // Documentation of the run, kept through a save/load round trip.
  std::string created;              // "2026-12-01 10:00 UTC"
  std::vector<std::string> models;  // model folders whose shapes were tuned

 private:
  static uint64_t key(int64_t n, int64_t k) {
    return (static_cast<uint64_t>(n) << 32) | static_cast<uint64_t>(k);
  }
  GpuIdentity gpu_;
  DType dtype_ = DType::kF16;
  std::vector<GemmTableShape> shapes_;
  std::unordered_map<uint64_t, size_t> index_;  // key(n, k) → shapes_ / by_m_ index
  // Per shape: index M - 1 → the resolved choice, for M = 1..the last entry's m.
  std::vector<std::vector<std::optional<ImplChoice>>> by_m_;
  std::vector<std::optional<ImplChoice>> beyond_;  // per shape: for M past the last entry
};

// The choice of every M in 1..last tuned M, as lookup() resolves it.
// Where the table is non-monotone (GEMV winning again after a flat win), M1 and M2
// summarize the last win of each side; the per-M choice is what runs.
struct GemmThresholds {
  int m1 = 0;  // the last M where ImplA serves (0: never); M1 + 1 is the first flat/cuBLASLt M
  int m2 = 0;  // the last M where ImplA or ImplB serves (0: never): cuBLASLt above
  bool monotone = true;  // gemv, then flat, then cuBLASLt, with no switch back
};
// "default" entries count as the built-in rule would serve them (GEMV up to
// kDefaultGemvMaxM, flat up to kDefaultFlatMaxM).
GemmThresholds gemm_thresholds(const TunedGemmTable& table, const GemmTableShape& shape);

// The largest M an entry may name: far past any decode batch or prefill chunk, small
// enough that the per-M index (8 bytes an M) stays a few hundred KB at worst.
inline constexpr int kMaxGemmTableM = 1 << 16;

// GEMV 0, flat 1, cuBLASLt 2: the order M moves through as it grows (ties in a
// derivation go to the lower rank).
int gemm_impl_rank(GemmImpl impl);
// An entry's "impl" and "config" as the JSON and the built-in rows spell them: "default"
// for nullopt; the configuration's name for a flat choice, "" otherwise.
std::string gemm_entry_impl_name(const std::optional<ImplChoice>& choice);
std::string gemm_entry_config_name(const std::optional<ImplChoice>& choice);

// ---- files --------------------------------------------------------------------------

std::string serialize_gemm_table(const TunedGemmTable& table);
// Errors (InvalidArgument) name `where` and the field at fault.
Result<TunedGemmTable> parse_gemm_table(const std::string& text, const std::string& where);
// NotFound when the file does not exist; otherwise IoError or parse_gemm_table's errors.
Result<TunedGemmTable> load_gemm_table(const std::filesystem::path& path);
// Writes through a temporary file and a rename, so an engine starting meanwhile reads
// the old table or the new one, never half of one. Creates the directory.
Status save_gemm_table(const TunedGemmTable& table, const std::filesystem::path& path);

// InvalidArgument naming both GPUs (or dtypes) when `table` was not measured on `gpu`
// for `dtype`: the caller then uses the built-in defaults, with one warning.
Status check_gemm_table_matches(const TunedGemmTable& table, const GpuIdentity& gpu,
                                DType dtype);

// ---- built-in defaults (dispatch/gemm_table_h200.cpp, written by `fdpp tune --emit-cpp`) ----

// One row per run of equal choices: the choice for M in (previous row's m, m] of its shape.
struct BuiltinGemmRow {
  const char* shape;
  int64_t n, k;
  int m;
  const char* impl;    // "gemv", "flat", "cublas" or "default"
  const char* config;  // flat: the configuration's name; otherwise ""
  int splits;          // 0: the planner's split-K
  int algo;            // cublas: cuBLASLt's heuristic answer (0: its first)
  double us;           // measured time at m (0: not measured)
};
struct BuiltinGemmTable {
  const char* gpu_name;
  int sm_count, cc_major, cc_minor, cuda_runtime;
  const char* dtype;
  const char* created;
  const BuiltinGemmRow* rows;
  int row_count;
};
const BuiltinGemmTable& builtin_gemm_table_data();

// The built-in table for `dtype`: measured in one dtype, stamped with the one asked
// for, since the f16 and bf16 kernels stream the same bytes. Its identity is the GPU
// it was measured on; use it on any GPU (it is the fallback), not only that one.
Result<TunedGemmTable> builtin_gemm_table(DType dtype);
}  // namespace fdpp
